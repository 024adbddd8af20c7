//go:build !cgo

package inside

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/sandbox/linux/initproto"
)

// earlyArg is the argument the constructor of a cgo build recognises the
// init by.
const earlyArg = "__sandbox"

// earlyLockdown: a build without cgo has no constructor, and the init
// drops the bounding set with all-threads calls in setup.
func earlyLockdown() (done bool, ns int64, err error) { return false, 0, nil }

// The join of the sandbox's cgroups by joinCgroups.
var (
	joinAsked bool
	joinErr   error
	joinZero  = [1]byte{'0'}
)

// joinCgroups joins the sandbox's cgroups when the host asks
// (initproto.JoinEnv), as the constructor of a cgo build does before the
// runtime starts. Without one, the runtime's threads exist already, and
// cgroup v1 moves one thread per write of 0 to tasks: every thread writes
// it (an all-threads call) into both tasks files, and any thread made
// later is cloned from one that is in. It runs first thing in Main, before
// the descriptors are closed, and closes JoinFD.
func joinCgroups() {
	if os.Getenv(initproto.JoinEnv) != "1" {
		return
	}
	joinAsked = true
	defer unix.Close(initproto.JoinFD)
	for _, fd := range []int{initproto.JoinFD, initproto.InitTasksFD} {
		if err := allThreads6(unix.SYS_PWRITE64, uintptr(fd), uintptr(unsafe.Pointer(&joinZero[0])), 1, 0); err != nil {
			joinErr = fmt.Errorf("on every thread: %w", joinError(fd, err))
			return
		}
	}
}

// earlyJoin reports whether joinCgroups was asked to join the sandbox's
// cgroups, and how the join failed.
func earlyJoin() (asked bool, err error) { return joinAsked, joinErr }
