//go:build cgo

package inside

/*
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define AIRLOCK_INIT_ARG "__sandbox"
#define AIRLOCK_JOIN_ENV "AIRLOCK_INIT_JOIN"
#define AIRLOCK_JOIN_MEMORY_FD 9 // initproto.JoinFD
#define AIRLOCK_JOIN_PIDS_FD 8   // initproto.InitTasksFD

// The lockdown the sandbox's init does before the Go runtime starts: see
// early_cgo_linux.go. Set once by the constructor, read by Go afterwards.
int airlock_early_done;
int airlock_early_errno;
int airlock_early_cap = -1; // the capability whose drop failed, or -1
long long airlock_early_ns;
// The constructor's join of the sandbox's cgroups (initproto.JoinFD):
// 1 when asked, and the errno of the write that failed and its fd.
int airlock_join_asked;
int airlock_join_errno;
int airlock_join_fd = -1;

// airlock_join writes 0 (the writing thread) to a cgroup v1 tasks file.
static int airlock_join(int fd) {
	if (pwrite(fd, "0", 1, 0) != 1)
		return errno ? errno : EIO;
	return 0;
}

static int airlock_is_init(void) {
	if (getpid() != 1)
		return 0;
	char buf[256]; // argv[0] is "airlock"; a longer one leaves the work to the Go side
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	size_t first = strlen(buf);
	if ((ssize_t)first + 1 >= n)
		return 0;
	return strcmp(buf + first + 1, AIRLOCK_INIT_ARG) == 0;
}

static long long airlock_now(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

__attribute__((constructor)) static void airlock_early(void) {
	if (!airlock_is_init())
		return;
	long long t = airlock_now();
	airlock_early_done = 1;
	// First, the cgroups, so that everything after is charged there: the
	// process has its one thread, so moving the writing thread moves it
	// whole (see initproto.JoinFD). The Go side checks the result.
	const char *join = getenv(AIRLOCK_JOIN_ENV);
	if (join != NULL && strcmp(join, "1") == 0) {
		airlock_join_asked = 1;
		airlock_join_fd = AIRLOCK_JOIN_MEMORY_FD;
		airlock_join_errno = airlock_join(AIRLOCK_JOIN_MEMORY_FD);
		if (airlock_join_errno == 0) {
			airlock_join_fd = AIRLOCK_JOIN_PIDS_FD;
			airlock_join_errno = airlock_join(AIRLOCK_JOIN_PIDS_FD);
		}
		close(AIRLOCK_JOIN_MEMORY_FD);
	}
	// NOROOT, NOROOT_LOCKED, NO_SETUID_FIXUP(+LOCKED), KEEP_CAPS_LOCKED,
	// as dropBounding sets them.
	if (prctl(PR_SET_SECUREBITS, 0x2f, 0, 0, 0) != 0) {
		airlock_early_errno = errno;
		return;
	}
	for (int c = 0; c < 64; c++) {
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) != 0) {
			if (errno == EINVAL) // past the kernel's last capability
				break;
			airlock_early_errno = errno;
			airlock_early_cap = c;
			return;
		}
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
		airlock_early_errno = errno;
		return;
	}
	airlock_early_ns = airlock_now() - t;
}
*/
import "C"

import (
	"fmt"
	"syscall"
)

// earlyArg is the argument the constructor recognises the init by.
const earlyArg = C.AIRLOCK_INIT_ARG

// The constructor's own copies of the protocol's names.
const (
	earlyJoinEnv      = C.AIRLOCK_JOIN_ENV
	earlyJoinMemoryFD = C.AIRLOCK_JOIN_MEMORY_FD
	earlyJoinPidsFD   = C.AIRLOCK_JOIN_PIDS_FD
)

// joinCgroups: the constructor joined the cgroups already (earlyJoin).
func joinCgroups() {}

// earlyJoin reports whether the constructor was asked to join the
// sandbox's cgroups, and how the join failed.
func earlyJoin() (asked bool, err error) {
	if C.airlock_join_asked == 0 {
		return false, nil
	}
	if e := syscall.Errno(C.airlock_join_errno); e != 0 {
		return true, joinError(int(C.airlock_join_fd), e)
	}
	return true, nil
}

// earlyLockdown reports the lockdown a C constructor did as the binary was
// loaded, when it is the sandbox's init (PID 1, started with the init's
// argument): the securebits, the empty bounding and ambient sets and
// no_new_privs. These are per thread, and once the Go runtime runs each
// takes an all-threads call (psx: every thread stopped and signalled, 44
// times); before it starts there is one thread and they are 44 plain
// syscalls, inherited by every thread the runtime makes later.
func earlyLockdown() (done bool, ns int64, err error) {
	if C.airlock_early_done == 0 {
		return false, 0, nil
	}
	if e := syscall.Errno(C.airlock_early_errno); e != 0 {
		if c := int(C.airlock_early_cap); c >= 0 {
			return true, 0, fmt.Errorf("dropping capability %d from the bounding set: %w", c, e)
		}
		return true, 0, fmt.Errorf("locking the securebits, the ambient set or no_new_privs: %w", e)
	}
	return true, int64(C.airlock_early_ns), nil
}
