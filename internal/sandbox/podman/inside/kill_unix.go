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

// waitAll reaps children until none is left: as PID 1 every process of
// the container is a descendant, so none is left once all have exited.
func waitAll() {
	if os.Getpid() != 1 {
		return
	}
	for {
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(-1, &ws, 0, nil); err == syscall.ECHILD {
			return
		}
	}
}
