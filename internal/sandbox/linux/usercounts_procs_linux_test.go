package linux_test

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// procsUID is the host user TestSandboxesTogetherLeaveTheUserProcesses
// runs its broker as: one of its own, since the kernel counts processes
// per user and another test's sandboxes of countsUID would share them.
const procsUID = 61235

// userProcs is the soft RLIMIT_NPROC the child runs with (the hard limit
// stays): a user's allowance like that of limits.conf's nproc (RHEL's
// 20-nproc.conf sets 4096), small enough for a few sandboxes to use up.
const userProcs = 600

// TestSandboxesTogetherLeaveTheUserProcesses: sandboxes running at once
// hold together at most half of the processes the broker's user may have
// (RLIMIT_NPROC), so the user's own processes, the broker's threads among
// them, can still be made. The kernel counts a sandbox's processes in its
// own user namespace (its RLIMIT_NPROC, its process limit) and against
// the user that made it too, up to that user's RLIMIT_NPROC: a broker
// without root whose user may have 600 processes ran three sandboxes of
// the default 256, and while they held what they could, fork failed
// (EAGAIN) for every process of the user, bash's "fork: retry: Resource
// temporarily unavailable", and a Go broker that needed a thread then died
// (red team). The child half is
// TestSandboxesTogetherLeaveTheUserProcessesChild.
func TestSandboxesTogetherLeaveTheUserProcesses(t *testing.T) {
	needPython(t)
	runChildAs(t, procsUID, "TestSandboxesTogetherLeaveTheUserProcessesChild")
}

// TestSandboxesTogetherLeaveTheUserProcessesChild is the half of
// TestSandboxesTogetherLeaveTheUserProcesses that runs as procsUID.
func TestSandboxesTogetherLeaveTheUserProcessesChild(t *testing.T) {
	if os.Getenv("AIRLOCK_UNPRIV_CHILD") != "1" {
		t.Skip("runs only as the child of TestSandboxesTogetherLeaveTheUserProcesses")
	}
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NPROC, &rl); err != nil || rl.Max != unix.RLIM_INFINITY && rl.Max < 2*userProcs {
		t.Skipf("RLIMIT_NPROC %+v (%v): no room for the test's soft limit", rl, err)
	}
	// Before the first sandbox: the backend reads the user's limit once.
	rl.Cur = userProcs
	if err := unix.Setrlimit(unix.RLIMIT_NPROC, &rl); err != nil {
		t.Fatal(err)
	}
	// Each sandbox forks until its limit (or the user's) refuses one;
	// the children wait for the sandbox to end.
	script := `import os, sys
n = 0
while n < 4096:
    try:
        pid = os.fork()
    except OSError:
        break
    if pid == 0:
        os.read(0, 1)
        os._exit(0)
    n += 1
print("held", n, flush=True)
sys.stdin.read()
`
	n := userProcs/256 + 2
	held, release := holdSandboxes(t, n, script)
	defer release()
	total := 0
	for _, h := range held {
		total += h
	}
	if total == 0 {
		t.Fatalf("no sandbox made a process: %v", held)
	}
	// Every sandbox holds what it made: the user's own processes must
	// still have half of the allowance.
	err := exec.Command("/bin/true").Run()
	if total > userProcs/2 || err != nil {
		t.Errorf("%d sandboxes at once hold %v processes (%d) of the user's %d, and the user's own fork and exec of /bin/true gave %v: want at most half held by sandboxes", n, held, total, userProcs, err)
	}
	t.Logf("held %v of %s", held, strconv.Itoa(userProcs))
}

// TestSandboxesTogetherLeaveTheUserLockedMemory: sandboxes running at once
// lock together at most half of the shared memory the broker's user may
// lock (RLIMIT_MEMLOCK, which the kernel charges SHM_LOCK to in every user
// namespace up to the one of the user that made the sandbox's): a
// sandbox inheriting the user's 8 MiB locked it all, and the user's own
// processes could lock not one page of SysV shared memory (ENOMEM) while
// it ran (red team). The child half is
// TestSandboxesTogetherLeaveTheUserLockedMemoryChild.
func TestSandboxesTogetherLeaveTheUserLockedMemory(t *testing.T) {
	needPython(t)
	runChildAs(t, countsUID, "TestSandboxesTogetherLeaveTheUserLockedMemoryChild")
}

// shmLock is a Python script that makes and locks SysV shared memory
// segments of one page (SHM_LOCK) until the kernel refuses one, then says
// how many it holds. With "hold" it then reads its stdin to the end (a
// sandbox's segments go with its IPC namespace); without, it removes them
// (the host's IPC namespace keeps a segment until it is removed).
const shmLock = `import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
ids, n = [], 0
while n < 1 << 16:
    i = libc.shmget(0, ctypes.c_size_t(4096), 0o1600)
    if i < 0:
        break
    ids.append(i)
    if libc.shmctl(i, 11, None) < 0:
        break
    n += 1
print("held", n, flush=True)
if sys.argv[1:] == ["hold"]:
    sys.stdin.read()
for i in ids:
    libc.shmctl(i, 0, None)
`

// TestSandboxesTogetherLeaveTheUserLockedMemoryChild is the half of
// TestSandboxesTogetherLeaveTheUserLockedMemory that runs as countsUID.
func TestSandboxesTogetherLeaveTheUserLockedMemoryChild(t *testing.T) {
	if os.Getenv("AIRLOCK_UNPRIV_CHILD") != "1" {
		t.Skip("runs only as the child of TestSandboxesTogetherLeaveTheUserLockedMemory")
	}
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &rl); err != nil || rl.Cur == unix.RLIM_INFINITY || rl.Cur < 64<<10 {
		t.Skipf("RLIMIT_MEMLOCK %+v (%v): no small bound to share", rl, err)
	}
	held, release := holdSandboxes(t, 3, strings.Replace(shmLock, `if sys.argv[1:] == ["hold"]:`, "if True:", 1))
	defer release()
	total := 0
	for _, h := range held {
		total += h
	}
	if total == 0 {
		t.Fatalf("no sandbox locked a page: %v", held)
	}
	// The user's own process, outside every sandbox, locks what is left
	// to it (and removes its segments as it ends).
	out, err := exec.Command("/usr/bin/python3", "-c", shmLock).Output()
	mine, _ := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(string(out), "held ")))
	page := int(rl.Cur) / 4096
	if total > page/2 || err != nil || mine == 0 {
		t.Errorf("3 sandboxes at once lock %v pages (%d) of the user's %d, and the user's own process locked %d (%v): want at most half locked by sandboxes", held, total, page, mine, err)
	}
}
