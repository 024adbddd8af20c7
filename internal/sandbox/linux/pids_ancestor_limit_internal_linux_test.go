package linux

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/airlockhq/airlock/internal/sandbox"
)

// TestAncestorProcessLimitNotTheCalls: a fork refused by the process limit
// of a cgroup above the sandbox's (the broker's own: a systemd TasksMax, a
// container's pids limit) is not the call's process limit. On cgroup v1
// the kernel counts such a refusal in pids.events of the cgroup that
// forked, whichever ancestor refused it; before, the call was reported as
// having hit its own process limit ("sh hit its process limit (256) and
// was killed") when it had a handful of processes and was killed by
// nothing.
func TestAncestorProcessLimitNotTheCalls(t *testing.T) {
	h := detectCgroups("")
	if h.version != 1 {
		t.Skipf("cgroup v1 memory and pids hierarchies needed (%s); v2 counts the refusal where the limit is", h.reason)
	}
	mounts, err := cgroupMounts()
	if err != nil {
		t.Fatal(err)
	}
	parent := fmt.Sprintf("airlock-test-ancestor-%d", os.Getpid())
	for _, ctrl := range []string{"memory", "pids"} {
		d := filepath.Join(mounts[ctrl], parent)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Skipf("cannot make a cgroup to parent the sandbox: %v", err)
		}
		t.Cleanup(func() { _ = removeCgroup(d, 1) })
	}
	// Room for the init's threads and a few processes of the command, far
	// below the call's own limit.
	if err := writeFile(filepath.Join(mounts["pids"], parent, "pids.max"), "20"); err != nil {
		t.Fatal(err)
	}
	b, err := New(&Options{Executable: os.Args[0], CgroupParent: parent})
	if err != nil {
		t.Skipf("no sandbox here: %v", err)
	}
	defer b.Close()
	var out bytes.Buffer
	res, err := b.Run(context.Background(), &sandbox.Spec{
		Command: []string{"/bin/sh", "-c", "i=0; while [ $i -lt 40 ]; do sleep 2 & i=$((i+1)); done; wait"},
		Env:     []string{"PATH=/usr/bin:/bin"},
		Limits:  sandbox.Limits{Pids: 256},
		Stdout:  &out, Stderr: &out,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(out.Bytes(), []byte("fork")) {
		t.Fatalf("the ancestor's limit refused no fork (exit %d, output %q): the test proves nothing", res.ExitCode, out.String())
	}
	if res.Limit == sandbox.LimitProcesses || slices.Contains(res.LimitsHit, sandbox.LimitProcesses) {
		t.Errorf("a fork refused by the parent cgroup's pids.max (20) is reported as the call's process limit (256): Limit %q, LimitsHit %v (exit %d, output %q)",
			res.Limit, res.LimitsHit, res.ExitCode, out.String())
	}
}
