package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/procid"
)

// TestKilledBrokerNotYetReapedIsSwept: a broker killed with SIGKILL whose
// parent has not reaped it yet (a zombie: a parent busy elsewhere, or an
// orphan under a PID 1 that reaps nothing, as in many containers) is dead
// for the next airlock: its call gets its interrupted record and its
// session its close, and its placeholders in the working directory and its
// cgroups are removed. A zombie's /proc entry, start time included, stays
// until it is reaped, so it counted as alive: what it left stayed for as
// long as nobody reaped it, for good under such a PID 1.
func TestKilledBrokerNotYetReapedIsSwept(t *testing.T) {
	airlock, err := exec.LookPath("airlock")
	if err != nil {
		t.Fatalf("the test binary is not on PATH as airlock: %v", err)
	}
	state, work := t.TempDir(), t.TempDir()
	env := append(os.Environ(), "AIRLOCK_STATE_DIR="+state)
	cmd := exec.Command(airlock, append(append([]string{"exec"}, execFlags()...), "--", "sh", "-c", "touch started; exec sleep 1000")...)
	cmd.Dir, cmd.Env = work, env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	for {
		if _, err := os.Stat(filepath.Join(work, "started")); err == nil {
			break
		}
		if f := procid.StatFields(pid); len(f) == 0 || f[0] == "Z" {
			t.Fatalf("airlock exec ended before its command started; stderr %q", &stderr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// Not waited for: a zombie until the cleanup reaps it.
	for {
		f := procid.StatFields(pid)
		if len(f) == 0 {
			t.Fatal("the killed broker was reaped")
		}
		if f[0] == "Z" {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	next := exec.Command(airlock, append(append([]string{"exec"}, execFlags()...), "--", "true")...)
	next.Dir, next.Env = work, env
	if out, err := next.CombinedOutput(); err != nil {
		t.Fatalf("the next airlock exec: %v\n%s", err, out)
	}
	var interrupted bool
	for _, r := range records(t, state) {
		interrupted = interrupted || r.Kind == audit.KindCall && r.Class == audit.ClassInterrupted
	}
	if !interrupted {
		t.Error("the killed broker's call has no interrupted record")
	}
	left, err := os.ReadDir(work)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range left {
		if e.Name() != "started" {
			t.Errorf("the killed broker's %s is left in the working directory", e.Name())
		}
	}
	// The cgroups of its sandboxes, at the depths this host's hierarchies
	// hold them (v1 memory under a per-process parent, v1 pids, v2).
	for _, pattern := range []string{"/sys/fs/cgroup/*/", "/sys/fs/cgroup/*/*/", "/sys/fs/cgroup/*/*/*/", "/sys/fs/cgroup/"} {
		left, _ := filepath.Glob(pattern + "airlock-" + strconv.Itoa(pid) + "-*")
		for _, cg := range left {
			t.Errorf("the killed broker's cgroup %s is left", cg)
		}
	}
}
