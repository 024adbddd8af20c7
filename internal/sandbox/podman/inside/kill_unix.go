//go:build unix

package inside

import (
	"os"
	"syscall"
)

// killAll sends sig to every other process of the container: as PID 1 of
// the container's PID namespace, kill(-1) reaches those and nothing else.
// Anywhere but PID 1 (the mode run by hand on a host) it does nothing.
func killAll(sig syscall.Signal) {
	if os.Getpid() == 1 {
		_ = syscall.Kill(-1, sig)
	}
}
