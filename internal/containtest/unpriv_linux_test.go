package containtest_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/internal/containtest"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandboxtest"
	"github.com/airlockhq/airlock/internal/testenv"
)

// TestNativeUnprivileged runs the containment suite against the native
// sandbox of an unprivileged broker: the test binary re-run as uid 65534
// through setpriv (TestNativeUnprivChild). Such a broker may manage no
// cgroup on this host, so its grant accepts unenforced memory and process
// limits and the fork and memory bombs skip, naming them; every other
// case holds as for root.
func TestNativeUnprivileged(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to switch to uid 65534 (already unprivileged: TestNative covers it)")
	}
	setpriv, err := exec.LookPath("setpriv")
	if err != nil {
		t.Skip("setpriv (util-linux) not installed; a test tool, not a kernel feature")
	}
	dir, err := os.MkdirTemp("", "airlock-containtest-unpriv-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	probe, err := containtest.BuildProbe(dir)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "containtest.test")
	testenv.CopyExecutable(t, os.Args[0], bin)
	cmd := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", bin, "-test.run=^TestNativeUnprivChild$", "-test.v", "-test.count=1")
	cmd.Env = []string{"AIRLOCK_CONTAINTEST_UNPRIV=1", "AIRLOCK_CONTAINTEST_PROBE=" + probe, "PATH=/usr/bin:/bin", "TMPDIR=/tmp",
		"AIRLOCK_REQUIRE_FEATURES=" + os.Getenv("AIRLOCK_REQUIRE_FEATURES")}
	cmd.Dir = "/"
	out, err := cmd.CombinedOutput()
	t.Logf("child output:\n%s", out)
	if err != nil {
		t.Fatalf("unprivileged run failed: %v", err)
	}
	if !strings.Contains(string(out), "--- PASS: TestNativeUnprivChild") {
		t.Fatal("the child did not pass")
	}
}

// TestNativeUnprivChild is the unprivileged half of TestNativeUnprivileged.
func TestNativeUnprivChild(t *testing.T) {
	if os.Getenv("AIRLOCK_CONTAINTEST_UNPRIV") != "1" {
		t.Skip("runs only as the child of TestNativeUnprivileged")
	}
	if os.Geteuid() == 0 {
		t.Fatal("the child runs as root")
	}
	backend, err := sandboxtest.New()
	if err != nil {
		var mf *sandbox.MissingFeatureError
		if errors.As(err, &mf) {
			testenv.RequireFeature(t, mf.Error())
		}
		t.Fatalf("starting the native backend as uid %d: %v", os.Geteuid(), err)
	}
	containtest.Run(t, sessionsOn(backend), &containtest.Options{AllowUnenforced: true, Probe: os.Getenv("AIRLOCK_CONTAINTEST_PROBE")})
}
