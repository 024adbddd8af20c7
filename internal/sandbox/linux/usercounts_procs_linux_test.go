package linux_test

import (
	"os"
	"os/exec"
	"strconv"
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
