package linux_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/linux"
	"github.com/airlockhq/airlock/internal/testenv"
	"github.com/airlockhq/airlock/wire"
)

// TestUnprivileged re-runs a few cases as uid 65534 through setpriv. An
// unprivileged broker cannot create cgroups on this host, so the decision
// is: CgroupsDefault (and CgroupsOptional) start without them, and each
// Run is refused (the memory and process limits cannot be enforced) unless
// its Spec accepts that with Limits.AllowUnenforced; it then lists
// "cgroups" under Isolation.Missing and the limits under
// Isolation.Unenforced, with memory bounded by RLIMIT_AS only.
// CgroupsRequired fails closed with a MissingFeatureError. The child half
// is TestUnprivChild.
func TestUnprivileged(t *testing.T) {
	runUnprivChild(t, "TestUnprivChild")
}

// runUnprivChild runs the test binary's test name as uid 65534, with env
// added to its environment, and fails unless it passes.
func runUnprivChild(t *testing.T, name string, env ...string) {
	t.Helper()
	runChildAs(t, 65534, name, env...)
}

// runChildAs runs the test binary's test name as uid and gid id, with env
// added to its environment, and fails unless it passes.
func runChildAs(t *testing.T, id int, name string, env ...string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skipf("needs root to switch to uid %d (already unprivileged: the other tests cover it)", id)
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv (util-linux) not installed; a test tool, not a kernel feature")
	}
	dir, err := os.MkdirTemp("", "llsandbox-unpriv-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "sandbox.test")
	testenv.CopyExecutable(t, os.Args[0], bin)
	cmd := exec.Command(setpriv, "--reuid="+strconv.Itoa(id), "--regid="+strconv.Itoa(id), "--clear-groups", bin, "-test.run=^"+name+"$", "-test.v", "-test.count=1")
	cmd.Env = append([]string{"AIRLOCK_UNPRIV_CHILD=1", "PATH=/usr/bin:/bin", "TMPDIR=/tmp", "AIRLOCK_REQUIRE_FEATURES=" + os.Getenv("AIRLOCK_REQUIRE_FEATURES"),
		separateInitEnv + "=" + separateInitExe(t)}, env...)
	cmd.Dir = "/"
	outb, err := cmd.CombinedOutput()
	t.Logf("child output:\n%s", outb)
	if err != nil {
		t.Fatalf("unprivileged run failed: %v", err)
	}
	if !strings.Contains(string(outb), "--- PASS: "+name) {
		t.Fatal("child did not pass")
	}
}

// TestUnprivChild is the unprivileged half of TestUnprivileged.
func TestUnprivChild(t *testing.T) {
	if os.Getenv("AIRLOCK_UNPRIV_CHILD") != "1" {
		t.Skip("runs only as the child of TestUnprivileged")
	}
	if os.Geteuid() == 0 {
		t.Fatal("child runs as root")
	}
	_, err := linux.New(&linux.Options{Executable: os.Args[0], Cgroups: linux.CgroupsRequired})
	var mf *sandbox.MissingFeatureError
	if !errors.As(err, &mf) {
		t.Fatalf("CgroupsRequired as uid %d: err %v, want MissingFeatureError", os.Geteuid(), err)
	}
	b, err := linux.New(&linux.Options{Executable: os.Args[0]})
	if err != nil {
		t.Fatalf("New with defaults: %v", err)
	}
	backendOnce.Do(func() { backendVal = b })
	if hasCgroups(b) {
		t.Skipf("uid %d may manage cgroups on this host: nothing to refuse", os.Geteuid())
	}

	// A Spec always has memory and process limits (zero means the
	// default): without cgroups it is refused, naming them and the fix.
	for _, tc := range []struct {
		limits sandbox.Limits
		want   string
	}{
		{sandbox.Limits{}, "the memory limit (1GiB) and the process limit (256)"},
		{sandbox.Limits{MemoryBytes: 64 << 20, Pids: 32}, "the memory limit (64MiB) and the process limit (32)"},
	} {
		var so strings.Builder
		res, err := b.Run(context.Background(), &sandbox.Spec{Limits: tc.limits, Stdout: &so, Command: []string{"/bin/echo", "ran"}})
		var mf *sandbox.MissingFeatureError
		if !errors.As(err, &mf) || res != nil || so.Len() != 0 {
			t.Fatalf("Run without cgroups: %v, %+v, stdout %q; want a MissingFeatureError and nothing run", err, res, so.String())
		}
		for _, want := range []string{tc.want, "Delegate=yes", "chown -R $USER /sys/fs/cgroup/$h/airlock-$USER", "--allow-unenforced-limits", `limits.unenforced = "allow"`} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("refusal %q does not say %q", err, want)
			}
		}
	}
	if got := b.Report().Unenforced(); !slices.Equal(got, []wire.Limit{"memory", "processes"}) || b.Report().Ready() {
		t.Errorf("Report: unenforced %q, ready %v; want [memory processes], not ready", got, b.Report().Ready())
	}
	// With the opt-out it runs, and says which limits did not hold.
	o := run(t, &sandbox.Spec{Limits: sandbox.Limits{AllowUnenforced: true}, Command: []string{"/bin/echo", "ran"}})
	if o.stdout != "ran\n" || !slices.Equal(o.res.Isolation.Unenforced, []wire.Limit{"memory", "processes"}) {
		t.Errorf("with AllowUnenforced: stdout %q, Unenforced %q; want it run and [memory processes]", o.stdout, o.res.Isolation.Unenforced)
	}

	o = sh(t, "id -u; grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status; (echo x >/proc/1/exe) 2>&1; unshare -Ur true; echo rc=$?")
	for _, want := range []string{"0\n", "CapEff:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2", "rc=1"} {
		if !strings.Contains(o.stdout, want) {
			t.Errorf("want %q in %q (stderr %q)", want, o.stdout, o.stderr)
		}
	}
	if !contains(o.res.Isolation.Missing, "cgroups") {
		t.Errorf("Missing = %v, want cgroups listed", o.res.Isolation.Missing)
	}
	t.Run("ro", TestHostile06WritesToReadOnlyGrant)
	t.Run("fds", TestHostile39LeakedFDs)
	t.Run("exe", TestHostile38OverwriteExe)
	t.Run("escape", TestHostile14EscapeProcessGroup)
	t.Run("nested", TestHostile07NestedGrantSwapped)
	t.Run("tty", TestTTY)
	t.Run("rename", TestHostileRenameAncestor)
	t.Run("symlink", TestProtectedSymlinkCovered)
	t.Run("placeholders", TestPlaceholderKinds)
	t.Run("tool-stop", TestToolStopRightAfterReady)
	t.Run("warm-landlock", TestWarmLandlockInForce)
	t.Run("warm-input", TestWarmInputWhole)
	t.Run("spares", TestWarmClaimLinksSpares)        // linked through /proc/self/fd: no CAP_DAC_READ_SEARCH
	t.Run("spawn", linux.TestSpawnedProcessAsForked) // the child maps its own ids as any user may
}

// TestUnprivilegedDelegatedV1 follows the cgroup v1 recipe of the refusal's
// fix: root makes and chowns a subtree in the memory and pids hierarchies
// (here under the test's own cgroups), the unprivileged broker moves
// itself into it, and then its limits hold: New with CgroupsRequired
// succeeds and a memory bomb is killed at the limit. The child half is
// TestUnprivDelegatedChild.
func TestUnprivilegedDelegatedV1(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to delegate a cgroup to uid 65534")
	}
	self, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, line := range strings.Split(strings.TrimSpace(string(self)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && (parts[1] == "memory" || parts[1] == "pids") {
			dirs = append(dirs, filepath.Join("/sys/fs/cgroup", parts[1], parts[2], "airlock-deleg-"+strconv.Itoa(os.Getpid())))
		}
	}
	if len(dirs) != 2 {
		t.Skip("no cgroup v1 memory and pids hierarchies (the v1 recipe does not apply)")
	}
	for _, d := range dirs {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(d)
		if err := filepath.Walk(d, func(p string, _ os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			return os.Chown(p, 65534, 65534)
		}); err != nil {
			t.Fatal(err)
		}
	}
	runUnprivChild(t, "TestUnprivDelegatedChild", "AIRLOCK_UNPRIV_CGROUPS="+strings.Join(dirs, ":"))
}

// TestUnprivDelegatedChild is the unprivileged half of
// TestUnprivilegedDelegatedV1.
func TestUnprivDelegatedChild(t *testing.T) {
	dirs := os.Getenv("AIRLOCK_UNPRIV_CGROUPS")
	if os.Getenv("AIRLOCK_UNPRIV_CHILD") != "1" || dirs == "" {
		t.Skip("runs only as the child of TestUnprivilegedDelegatedV1")
	}
	if os.Geteuid() == 0 {
		t.Fatal("child runs as root")
	}
	for _, d := range strings.Split(dirs, ":") {
		// echo $$ > /sys/fs/cgroup/$h/airlock-$USER/cgroup.procs
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), []byte(strconv.Itoa(os.Getpid())), 0); err != nil {
			t.Fatalf("moving into the delegated cgroup: %v", err)
		}
	}
	b, err := linux.New(&linux.Options{Executable: os.Args[0], Cgroups: linux.CgroupsRequired})
	if err != nil {
		t.Fatalf("New with a delegated cgroup: %v", err)
	}
	backendOnce.Do(func() { backendVal = b })
	if got := b.Report().Unenforced(); len(got) != 0 {
		t.Errorf("Report: unenforced %q, want none", got)
	}
	needPython(t)
	o := run(t, &sandbox.Spec{Limits: sandbox.Limits{MemoryBytes: 64 << 20}, Command: []string{"python3", "-c", "b = bytearray(300 << 20); print('allocated')"}})
	if o.res.Limit != "memory" || strings.Contains(o.stdout, "allocated") || len(o.res.Isolation.Unenforced) != 0 {
		t.Fatalf("Limit %q stdout %q Unenforced %q; want the memory limit to hold", o.res.Limit, o.stdout, o.res.Isolation.Unenforced)
	}
	// The init joined its cgroups itself (cgroup v1, a cgo build) as an
	// unprivileged broker's: every process stays in them, and both limits
	// hold, cold and warm.
	t.Run("contained", TestEveryTaskInItsCgroups)
	t.Run("bombs", TestBombsInModes)
}
