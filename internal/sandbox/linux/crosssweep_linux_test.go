package linux_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/linux"
)

// crossSweepEnv makes TestCrossSweepBroker the second broker.
const crossSweepEnv = "AIRLOCK_TEST_CROSS_SWEEP_BROKER"

// TestCrossSweepBroker is, run with crossSweepEnv, a broker starting: New
// sweeps the cgroups of brokers it takes for dead.
func TestCrossSweepBroker(t *testing.T) {
	if os.Getenv(crossSweepEnv) == "" {
		t.Skip("the second broker of TestCrossPIDNamespaceSweep")
	}
	b, err := linux.New(&linux.Options{Executable: os.Args[0], Cgroups: linux.CgroupsOptional, StateDir: os.Getenv(crossSweepEnv)})
	if err != nil {
		t.Fatal(err)
	}
	b.Close()
}

// A broker starting in another PID namespace over the same cgroups (a
// container sharing the host's cgroup tree, a broker under unshare -p)
// leaves the sandboxes of a live broker alone: its sweep looked each
// sandbox cgroup's broker pid up in its own PID namespace, found none,
// took the broker for dead and removed its cgroups: on cgroup v2 it
// killed the running calls (cgroup.kill), on v1 it removed the empty
// ones (a warm sandbox's payload cgroup, its command's process limit,
// so the call that claimed it could not start its command) and waited
// seconds on each busy one. Its sweep of placeholder journals took the
// live broker's for a dead one's too and removed it, so the live broker's
// placeholders outlived a later kill -9 of it: no journal named them.
func TestCrossPIDNamespaceSweep(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("a PID namespace of its own needs root here")
	}
	if !hasCgroups(backend(t)) {
		t.Skip("no cgroups: nothing is swept")
	}
	d := newDirs(t)
	spec := toolSpec(d)
	spec.Limits.Pids = 64
	state := t.TempDir()
	b := pooledWith(t, 1, state)
	if err := b.Prewarm(spec); err != nil {
		t.Fatal(err)
	}
	waitWarm(t, b, spec, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	running := runAsync(t, ctx, b, &sandbox.Spec{Mounts: d.mounts(), ReadOnly: []string{d.W + "/.vscode"}, ReadOnlyDirs: []string{d.W + "/.vscode"}, Command: []string{"/bin/sh", "-c",
		": >" + d.W + "/started; while [ ! -e " + d.W + "/go ]; do sleep 0.01; done; echo done"}})
	waitMade(t, d.W+"/started", running)

	if journals, _ := filepath.Glob(filepath.Join(state, ".placeholders", "*")); len(journals) == 0 {
		t.Fatal("the running call's placeholder is not journalled")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrossSweepBroker$", "-test.count=1")
	cmd.Env = append(os.Environ(), crossSweepEnv+"="+state)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID, Setpgid: true}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the second broker: %v\n%s", err, out)
	}
	// The live broker's journal of the placeholder it holds is still
	// there, for the sweep after its death.
	journals, _ := filepath.Glob(filepath.Join(state, ".placeholders", "*"))
	if len(journals) == 0 {
		t.Errorf("the second broker removed the live broker's placeholder journal")
	}
	if err := os.WriteFile(d.W+"/go", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := <-running; err != nil {
		t.Fatalf("the first broker's running call: %v", err)
	}
	o := callWith(t, b, spec, "sh:echo warm")
	if !warm(o) || o.stdout != "warm\n" {
		t.Fatalf("the first broker's warm call: warm %v, stdout %q, stderr %q, exit %d", warm(o), o.stdout, o.stderr, o.res.ExitCode)
	}
}
