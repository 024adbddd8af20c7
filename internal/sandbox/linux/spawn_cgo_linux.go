//go:build cgo && amd64

package linux

/*
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#define AIRLOCK_CLONE_VM 0x00000100ULL
#define AIRLOCK_CLONE_VFORK 0x00004000ULL
#define AIRLOCK_CLONE_PIDFD 0x00001000ULL
#define AIRLOCK_CLONE_CLEAR_SIGHAND 0x100000000ULL
#define AIRLOCK_CLONE_INTO_CGROUP 0x200000000ULL
#define AIRLOCK_SPAWN_MAX_FDS 32
#define AIRLOCK_CLOSE_RANGE_CLOEXEC (1U << 2)
#ifndef SYS_close_range
#define SYS_close_range 436
#endif
#define AIRLOCK_JOIN_PIDS_FD 8   // initproto.InitTasksFD
#define AIRLOCK_JOIN_MEMORY_FD 9 // initproto.JoinFD
#define AIRLOCK_SECUREBITS 0x2f  // as the init's dropBounding sets them
#define AIRLOCK_CLONE_NEWCGROUP 0x02000000

// struct clone_args of clone3(2), as of Linux 5.7.
struct airlock_clone_args {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls,
		set_tid, set_tid_size, cgroup;
};

// What the child does before it becomes the init, and what it reports.
typedef struct {
	const char *path;
	char *const *argv;
	char *const *envp;
	const int *fds;
	int nfds;
	unsigned uid, gid; // the host ids mapped to 0 in the new user namespace
	int ctty;          // make fd 0 the controlling terminal
	int join;          // join the cgroup v1 tasks files at fds 9 and 8
	int cgroupns;      // in its cgroups already: root a new cgroup namespace at them
	int lockdown;      // lock the securebits, empty the bounding set (see airlock_lockdown)
	int err;           // set by the child: the errno of the step that failed
	int step;          // and which step (airlock_spawn_steps)
	int cap;           // the capability step 11 failed on, or -1
} airlock_spawn_t;

// airlock_write_file writes s to the file at path (a /proc/self file).
static int airlock_write_file(const char *path, const char *s, size_t n) {
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	ssize_t w = write(fd, s, n);
	int e = w < 0 ? errno : (w != (ssize_t)n ? EIO : 0);
	close(fd);
	return e;
}

// airlock_idmap formats "0 ID 1\n" into buf, without stdio.
static size_t airlock_idmap(char *buf, unsigned id) {
	char digits[16];
	int n = 0;
	do {
		digits[n++] = '0' + id % 10;
		id /= 10;
	} while (id);
	size_t k = 0;
	buf[k++] = '0';
	buf[k++] = ' ';
	while (n)
		buf[k++] = digits[--n];
	buf[k++] = ' ';
	buf[k++] = '1';
	buf[k++] = '\n';
	return k;
}

// airlock_lockdown makes, in the child before its exec, the per-thread
// changes the init would otherwise make with an all-threads call once the
// Go runtime runs (see inside/lockdown_linux.go): the securebits locked
// (NOROOT, NO_SETUID_FIXUP, KEEP_CAPS, each locked), the bounding set
// emptied and no_new_privs set, all inherited through the exec and by
// every thread the init makes later. Since NOROOT keeps the exec from
// giving uid 0 its capabilities, the child's own (all of them, in its new
// user namespace) are raised into the ambient set first, which an exec
// keeps: the init starts with the capabilities it needs to build the
// sandbox and nothing else, and its clearing of its permitted and
// inheritable sets clears the ambient one with them. It returns the errno
// of the step that failed and sets *cap to the capability it failed on.
static int airlock_lockdown(int *cap) {
	struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
	struct __user_cap_data_struct data[2];
	if (syscall(SYS_capget, &hdr, data) != 0)
		return errno;
	data[0].inheritable = data[0].permitted;
	data[1].inheritable = data[1].permitted;
	if (syscall(SYS_capset, &hdr, data) != 0)
		return errno;
	int last = -1;
	for (int c = 0; c < 64; c++) {
		if (prctl(PR_CAPBSET_READ, c, 0, 0, 0) < 0)
			break; // EINVAL: past the kernel's last capability
		last = c;
		if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, c, 0, 0) != 0) {
			*cap = c;
			return errno;
		}
	}
	if (prctl(PR_SET_SECUREBITS, AIRLOCK_SECUREBITS, 0, 0, 0) != 0)
		return errno;
	for (int c = 0; c <= last; c++) {
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) != 0) {
			*cap = c;
			return errno;
		}
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0)
		return errno;
	return 0;
}

// airlock_child runs on its own stack, in the parent's memory (CLONE_VM),
// while the parent's thread waits (CLONE_VFORK) until it execs or exits.
// Its signal handlers are the defaults (CLONE_CLEAR_SIGHAND), so no Go
// handler can run here. It uses only system calls and its own stack.
static int airlock_child(void *p) {
	airlock_spawn_t *a = p;
	char buf[32];
	int tmp[AIRLOCK_SPAWN_MAX_FDS];
	int e = 0;
	sigset_t none;
	sigemptyset(&none);
	if (sigprocmask(SIG_SETMASK, &none, NULL) < 0) {
		e = errno, a->step = 1;
		goto fail;
	}
	// 0 in the new user namespace is the broker's uid and gid: a process
	// may map its own ids once setgroups is denied, as unshare -r does.
	if ((e = airlock_write_file("/proc/self/setgroups", "deny", 4))) {
		a->step = 2;
		goto fail;
	}
	if ((e = airlock_write_file("/proc/self/uid_map", buf, airlock_idmap(buf, a->uid)))) {
		a->step = 3;
		goto fail;
	}
	if ((e = airlock_write_file("/proc/self/gid_map", buf, airlock_idmap(buf, a->gid)))) {
		a->step = 4;
		goto fail;
	}
	if (setsid() < 0) {
		e = errno, a->step = 5;
		goto fail;
	}
	// Each file to a number above every target first, so no target
	// overwrites a source, then into place (dup2 clears close-on-exec
	// there; the copies above keep it and go at the exec).
	for (int i = 0; i < a->nfds; i++) {
		if ((tmp[i] = fcntl(a->fds[i], F_DUPFD_CLOEXEC, a->nfds)) < 0) {
			e = errno, a->step = 6;
			goto fail;
		}
	}
	for (int i = 0; i < a->nfds; i++) {
		if (dup2(tmp[i], i) < 0) {
			e = errno, a->step = 6;
			goto fail;
		}
	}
	// Nothing else goes through the exec, not even a descriptor the
	// broker inherited or made without close-on-exec (this child has its
	// own copy of the table). A kernel before 5.11 has no close_range:
	// then it is as a fork leaves it, and the init closes the rest.
	syscall(SYS_close_range, (unsigned)a->nfds, ~0U, AIRLOCK_CLOSE_RANGE_CLOEXEC);
	if (a->ctty && ioctl(0, TIOCSCTTY, 1) < 0) {
		e = errno, a->step = 7;
		goto fail;
	}
	// Into the sandbox's cgroup v1 memory and pids cgroups while the child
	// is one thread (see initproto.JoinFD): writing 0 moves the writer.
	if (a->join) {
		if (pwrite(AIRLOCK_JOIN_MEMORY_FD, "0", 1, 0) != 1) {
			e = errno, a->step = 9;
			goto fail;
		}
		if (pwrite(AIRLOCK_JOIN_PIDS_FD, "0", 1, 0) != 1) {
			e = errno, a->step = 10;
			goto fail;
		}
		close(AIRLOCK_JOIN_MEMORY_FD);
	}
	// The cgroup namespace made at the clone is rooted at the broker's
	// cgroups; one made now, in the sandbox's, shows them as "/". Done
	// here, while the child is one thread, the init need not make it on
	// every thread of its runtime (see initproto.CgroupNSEnv).
	if (a->cgroupns && syscall(SYS_unshare, AIRLOCK_CLONE_NEWCGROUP) != 0) {
		e = errno, a->step = 12;
		goto fail;
	}
	if (a->lockdown && (e = airlock_lockdown(&a->cap))) {
		a->step = 11;
		goto fail;
	}
	execve(a->path, a->argv, a->envp);
	e = errno, a->step = 8;
fail:
	a->err = e ? e : EIO;
	_exit(127);
	return 0;
}

// airlock_clone3 is clone3(2) with the child starting fn(arg) on the
// stack the args give; the parent gets the child's pid or -errno.
static long airlock_clone3(struct airlock_clone_args *cl, size_t size, int (*fn)(void *), void *arg) {
	long ret;
	register void *r12 __asm__("r12") = (void *)fn;
	register void *r13 __asm__("r13") = arg;
	__asm__ volatile(
		"syscall\n\t"
		"testq %%rax, %%rax\n\t"
		"jnz 1f\n\t"
		"xorl %%ebp, %%ebp\n\t"
		"movq %%r13, %%rdi\n\t"
		"callq *%%r12\n\t"
		"movl %%eax, %%edi\n\t"
		"movl $60, %%eax\n\t" // SYS_exit
		"syscall\n\t"
		"hlt\n\t"
		"1:\n\t"
		: "=a"(ret)
		: "0"((long)SYS_clone3), "D"(cl), "S"(size), "r"(r12), "r"(r13)
		: "rcx", "r11", "memory");
	return ret;
}

// airlock_spawn starts the child of a in new namespaces (nsflags) and,
// when cgroupfd >= 0, in that cgroup v2 directory; it returns the child's
// pid (its pidfd in *pidfd) once the child has exec'd or exited, or
// -errno when the clone failed.
static long airlock_spawn(airlock_spawn_t *a, uint64_t nsflags, int cgroupfd, int *pidfd) {
	size_t size = 64 << 10;
	void *stack = malloc(size);
	if (!stack)
		return -ENOMEM;
	struct airlock_clone_args cl;
	memset(&cl, 0, sizeof cl);
	cl.flags = nsflags | AIRLOCK_CLONE_VM | AIRLOCK_CLONE_VFORK | AIRLOCK_CLONE_PIDFD | AIRLOCK_CLONE_CLEAR_SIGHAND;
	cl.pidfd = (uint64_t)(uintptr_t)pidfd;
	cl.exit_signal = SIGCHLD;
	cl.stack = (uint64_t)(uintptr_t)stack;
	cl.stack_size = size;
	if (cgroupfd >= 0) {
		cl.flags |= AIRLOCK_CLONE_INTO_CGROUP;
		cl.cgroup = (uint64_t)cgroupfd;
	}
	long pid = airlock_clone3(&cl, sizeof cl, airlock_child, a);
	free(stack); // the child has exec'd or exited: its stack is no longer used
	return pid;
}
*/
import "C"

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/sandbox/linux/eintr"
	"github.com/airlockhq/airlock/internal/sandbox/linux/initproto"
)

// spawnSteps names the child's steps for errors, by airlock_spawn_t.step.
var spawnSteps = [...]string{1: "clearing the signal mask", 2: "denying setgroups", 3: "writing its uid_map",
	4: "writing its gid_map", 5: "starting a session", 6: "placing its files", 7: "taking the terminal", 8: "exec",
	9: "joining its memory cgroup", 10: "joining its pids cgroup", 11: "locking down its capabilities",
	12: "rooting its cgroup namespace at its cgroups"}

// spawnInit starts the sandbox's init without copying the broker: a clone
// that shares the broker's memory (CLONE_VM) until the child execs, while
// the calling thread waits (CLONE_VFORK), as posix_spawn does. A fork
// (what os.StartProcess must do for a child in a new user namespace, whose
// id maps the parent writes) copies the page tables of the whole broker
// and then takes a page fault for every page either side writes next.
// Here the child maps its ids itself, which a process may do for its own
// uid and gid once setgroups is denied, exactly the maps os.StartProcess
// would write. files become the child's fds 0, 1, ...; with ctty fd 0 is
// its controlling terminal; cgroup >= 0 is a cgroup v2 directory it is
// cloned into. With join, files 8 and 9 are the tasks files of the
// sandbox's cgroup v1 pids and memory cgroups, which the child joins
// before its exec, as the init's constructor would (initproto.JoinFD). It
// always locks the child's securebits, empties its bounding set and sets
// no_new_privs before the exec (airlock_lockdown), so that the init, which
// finds them so (inside's lockedAtSpawn), makes no all-threads call for
// them. A child in its cgroups before the exec (join, or cgroup >= 0)
// also roots a new cgroup namespace at them and says so in the init's
// environment (initproto.CgroupNSEnv), which the init would otherwise do
// with an all-threads call. An error wrapping errSpawnUnsupported means
// the caller should start the init with os.StartProcess instead.
func spawnInit(path string, argv, env []string, files []*os.File, ctty, join bool, cgroup int) (*os.Process, error) {
	if len(files) > C.AIRLOCK_SPAWN_MAX_FDS {
		return nil, fmt.Errorf("%w: %d files", errSpawnUnsupported, len(files))
	}
	rootNS := join || cgroup >= 0
	if rootNS {
		env = append(slices.Clip(env), initproto.CgroupNSEnv+"="+initproto.RootedBySpawn)
	}
	cstrs := func(ss []string) **C.char {
		arr := (**C.char)(C.calloc(C.size_t(len(ss)+1), C.size_t(unsafe.Sizeof((*C.char)(nil)))))
		s := unsafe.Slice(arr, len(ss)+1)
		for i, v := range ss {
			s[i] = C.CString(v)
		}
		return arr
	}
	freeStrs := func(arr **C.char, n int) {
		for _, p := range unsafe.Slice(arr, n) {
			C.free(unsafe.Pointer(p))
		}
		C.free(unsafe.Pointer(arr))
	}
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	cargv, cenv := cstrs(argv), cstrs(env)
	defer freeStrs(cargv, len(argv))
	defer freeStrs(cenv, len(env))
	fds := (*C.int)(C.calloc(C.size_t(len(files)+1), C.size_t(unsafe.Sizeof(C.int(0)))))
	defer C.free(unsafe.Pointer(fds))
	cfds := unsafe.Slice(fds, len(files))
	for i, f := range files {
		cfds[i] = C.int(f.Fd())
	}
	a := (*C.airlock_spawn_t)(C.calloc(1, C.size_t(unsafe.Sizeof(C.airlock_spawn_t{}))))
	defer C.free(unsafe.Pointer(a))
	a.path, a.argv, a.envp = cpath, cargv, cenv
	a.fds, a.nfds = fds, C.int(len(files))
	a.uid, a.gid = C.uint(os.Getuid()), C.uint(os.Getgid())
	if ctty {
		a.ctty = 1
	}
	if join {
		if len(files) <= initproto.JoinFD {
			return nil, fmt.Errorf("joining the cgroups before the exec: %d files, not the %d it takes", len(files), initproto.JoinFD+1)
		}
		a.join = 1
	}
	if rootNS {
		a.cgroupns = 1
	}
	a.lockdown, a.cap = 1, -1
	flags := uint64(unix.CLONE_NEWUSER | unix.CLONE_NEWNS | unix.CLONE_NEWPID | unix.CLONE_NEWNET |
		unix.CLONE_NEWIPC | unix.CLONE_NEWUTS)
	if !rootNS {
		flags |= unix.CLONE_NEWCGROUP // the child makes its own otherwise
	}
	var pidfd C.int = -1
	pid := C.airlock_spawn(a, C.uint64_t(flags), C.int(cgroup), &pidfd)
	runtime.KeepAlive(files)
	if pid < 0 {
		// A kernel without clone3 or one of its flags, or a refusal:
		// os.StartProcess says which, as it always has.
		return nil, fmt.Errorf("%w: clone3: %w", errSpawnUnsupported, syscall.Errno(-pid))
	}
	pfd := int(pidfd)
	defer unix.Close(pfd)
	reap := func() {
		var info unix.Siginfo
		_ = eintr.Retry(func() error { return unix.Waitid(unix.P_PIDFD, pfd, &info, unix.WEXITED, nil) })
	}
	if a.err != 0 {
		// The child exited before its exec: reap it.
		reap()
		step := "starting"
		if s := int(a.step); s > 0 && s < len(spawnSteps) {
			step = spawnSteps[s]
		}
		if a.step == 11 && a.cap >= 0 {
			step += fmt.Sprintf(" (capability %d)", int(a.cap))
		}
		return nil, fmt.Errorf("%w: the child failed %s: %w", errSpawnUnsupported, step, syscall.Errno(a.err))
	}
	p, err := os.FindProcess(int(pid))
	if err != nil {
		_ = unix.PidfdSendSignal(pfd, unix.SIGKILL, nil, 0)
		reap()
		return nil, fmt.Errorf("starting the sandbox init: %w", err)
	}
	return p, nil
}

// spawnBuilt says spawnInit is built in.
const spawnBuilt = true
