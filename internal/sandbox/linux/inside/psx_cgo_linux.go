//go:build cgo && !landlocktsync

package inside

// psxReadsTasks: with cgo, libpsx runs the all-thread system calls and
// lists the threads in /proc/PID/task (see newLandlockRuleset).
const psxReadsTasks = true
