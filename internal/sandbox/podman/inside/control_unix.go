//go:build unix

package inside

import (
	"os"
	"syscall"
)

// control returns the signals the broker sends on the control pipe at
// descriptor fd (none when fd < 0): one byte each, the signal's number.
// Unlike a signal sent to the container, which the kernel drops while
// PID 1 has no handler yet (between its exec and the Go runtime's
// start), a byte waits in the pipe until the init reads it, so a stop
// asked for at any moment is delivered. The descriptor is closed on exec:
// no process of the container gets it.
//
// The pipe's one writer is the broker's run, which closes it only once
// podman run has exited, the container with it: its end of file while the
// init runs is the broker gone (killed, crashed), and the init exits at
// once, which kills every process of the container. The podman client
// dies with the broker, but conmon does not, and the deadline may be a
// day away (background work): without this a command nothing owned
// went on writing the user's tree until then.
func control(fd int) <-chan syscall.Signal {
	if fd < 0 {
		return nil
	}
	syscall.CloseOnExec(fd)
	f := os.NewFile(uintptr(fd), "control")
	ch := make(chan syscall.Signal, 4)
	go func() {
		defer f.Close()
		b := make([]byte, 1)
		for {
			if _, err := f.Read(b); err != nil {
				os.Exit(128 + int(syscall.SIGKILL)) // as at the deadline: no one reads it
			}
			ch <- syscall.Signal(b[0])
		}
	}()
	return ch
}

// reportFile is the broker's report pipe at descriptor fd (nil when fd <
// 0), closed on exec like the control pipe: only the init writes it.
func reportFile(fd int) *os.File {
	if fd < 0 {
		return nil
	}
	syscall.CloseOnExec(fd)
	return os.NewFile(uintptr(fd), "report")
}
