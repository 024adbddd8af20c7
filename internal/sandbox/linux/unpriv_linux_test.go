package linux_test

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/linux"
)

// TestUnprivileged re-runs a few cases as uid 65534 through setpriv. An
// unprivileged broker cannot create cgroups on this host, so the decision
// is: CgroupsDefault (and CgroupsOptional) run without them and list
// "cgroups" under Isolation.Missing, with memory bounded by RLIMIT_AS
// only; CgroupsRequired fails closed with a MissingFeatureError. The
// child half is TestUnprivChild.
func TestUnprivileged(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to switch to uid 65534 (already unprivileged: the other tests cover it)")
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
	src, err := os.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(dst, src)
	src.Close()
	dst.Close()
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", bin, "-test.run=^TestUnprivChild$", "-test.v", "-test.count=1")
	cmd.Env = []string{"AIRLOCK_UNPRIV_CHILD=1", "PATH=/usr/bin:/bin", "TMPDIR=/tmp", "AIRLOCK_REQUIRE_FEATURES=" + os.Getenv("AIRLOCK_REQUIRE_FEATURES")}
	cmd.Dir = "/"
	outb, err := cmd.CombinedOutput()
	t.Logf("child output:\n%s", outb)
	if err != nil {
		t.Fatalf("unprivileged run failed: %v", err)
	}
	if !strings.Contains(string(outb), "--- PASS: TestUnprivChild") {
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

	o := sh(t, "id -u; grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status; (echo x >/proc/1/exe) 2>&1; unshare -Ur true; echo rc=$?")
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
	t.Run("escape", TestHostile14EscapeProcessGroup)
	t.Run("nested", TestHostile07NestedGrantSwapped)
	t.Run("tty", TestTTY)
	t.Run("rename", TestHostileRenameAncestor)
	t.Run("symlink", TestProtectedSymlinkCovered)
	t.Run("placeholders", TestPlaceholderKinds)
}
