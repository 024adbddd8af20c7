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
				return // the broker is done (or gone: the deadline still holds)
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
