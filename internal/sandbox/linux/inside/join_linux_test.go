package inside

import (
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/airlockhq/airlock/internal/sandbox/linux/initproto"
)

// TestJoinedIn reads /proc/self/cgroup as cgroup v1 and hybrid hosts
// write it.
func TestJoinedIn(t *testing.T) {
	const in = "12:pids:/airlock-1-2\n4:memory:/process_api/x/airlock-1-2\n1:cpu,cpuacct:/\n0::/\n"
	if err := joinedIn([]byte(in), "airlock-1-2"); err != nil {
		t.Errorf("in both: %v", err)
	}
	for name, c := range map[string]struct{ in, want string }{
		"memory outside": {"12:pids:/airlock-1-2\n4:memory:/process_api/x\n", "of the memory hierarchy"},
		"pids outside":   {"12:pids:/\n4:memory:/airlock-1-2\n", "of the pids hierarchy"},
		"a longer name":  {"12:pids:/xairlock-1-2\n4:memory:/airlock-1-2x\n", "of the memory and pids hierarchy"},
		"no hierarchies": {"0::/airlock-1-2\n", "of the memory and pids hierarchy"},
	} {
		err := joinedIn([]byte(c.in), "airlock-1-2")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", name, err, c.want)
		}
	}
}

// TestJoinErrorNamesTheHierarchy: a failed join says which of the two
// tasks files the constructor could not write, and why.
func TestJoinErrorNamesTheHierarchy(t *testing.T) {
	for fd, want := range map[int]string{initproto.JoinFD: "sandbox's memory cgroup (fd 9)", initproto.InitTasksFD: "sandbox's pids cgroup (fd 8)"} {
		err := joinError(fd, syscall.EBADF)
		if !strings.Contains(err.Error(), want) || !errors.Is(err, syscall.EBADF) {
			t.Errorf("fd %d: %v, want it to name the %s and wrap EBADF", fd, err, want)
		}
	}
}
