package inside

import (
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/airlockhq/airlock/internal/sandbox/linux/initproto"
)

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
