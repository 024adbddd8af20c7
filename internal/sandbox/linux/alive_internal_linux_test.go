package linux

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// TestAliveInterrupted: a signal interrupting the poll of a warm
// sandbox's stdout (the runtime's preemption signal does, on a loaded
// machine) does not make a live sandbox look dead, so the pool does not
// discard it and serve the call cold (TestUnprivChild/rename/warm failed
// 1 in 10 that way); a hung-up pipe still counts as dead.
func TestAliveInterrupted(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	interrupts := 0
	pollFds = func(fds []unix.PollFd, timeout int) (int, error) {
		if interrupts < 2 {
			interrupts++
			return -1, unix.EINTR
		}
		return unix.Poll(fds, timeout)
	}
	defer func() { pollFds = unix.Poll }()
	x := &box{c: &child{stdoutR: r}}
	if !alive(x) {
		t.Fatal("a live sandbox whose poll was interrupted counts as dead")
	}
	w.Close()
	if alive(x) {
		t.Fatal("a sandbox whose stdout hung up counts as alive")
	}
}
