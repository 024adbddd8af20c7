//go:build !cgo || landlocktsync

package inside

// psxReadsTasks: without cgo, the Go runtime runs the all-thread system
// calls itself (see newLandlockRuleset).
const psxReadsTasks = false
