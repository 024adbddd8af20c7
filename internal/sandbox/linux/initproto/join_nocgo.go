//go:build !cgo

package initproto

// InitJoins says that the init of this build joins its cgroups itself
// before the Go runtime starts, when the host asks (JoinEnv, JoinFD): a
// build without cgo has no constructor, and the host places the init.
const InitJoins = false
