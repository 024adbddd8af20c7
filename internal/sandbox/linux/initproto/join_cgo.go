//go:build cgo

package initproto

// InitJoins says that the init of this build joins its cgroups itself
// before the Go runtime starts, when the host asks (JoinEnv, JoinFD): a
// build with cgo has the C constructor that does it (package inside).
const InitJoins = true
