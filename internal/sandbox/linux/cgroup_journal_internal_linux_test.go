package linux

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox"
)

// TestDeadBrokersCgroupsSweptFromAnotherCgroup: a broker killed with
// SIGKILL mid-run left its sandboxes' cgroups under its own cgroup, and
// the next broker over the same state directory removes them though it
// runs in another cgroup (hostile case 53). The sweep looked under the
// new broker's own cgroup alone, so on cgroup v1, where a broker's memory
// cgroup is whatever its launcher's was (a login session's, a job
// runner's, a terminal's scope), a dead broker's memory and pids cgroups,
// its warm sandboxes' among them, stayed until the machine rebooted
// unless a broker happened to start in that same cgroup again (this
// machine held some twenty, of eight dead brokers, when the red team
// looked). The child half is TestDeadBrokersCgroupsChild.
func TestDeadBrokersCgroupsSweptFromAnotherCgroup(t *testing.T) {
	h := detectCgroups("")
	if h.version != 1 {
		t.Skipf("cgroup v1 memory and pids hierarchies needed (%s)", h.reason)
	}
	mounts, err := cgroupMounts()
	if err != nil {
		t.Fatal(err)
	}
	parent := "airlock-test-deadparent-" + strconv.Itoa(os.Getpid())
	var dirs []string
	for _, ctrl := range []string{"memory", "pids"} {
		d := filepath.Join(mounts[ctrl], parent)
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Skipf("cannot make a cgroup to parent the dead broker's: %v", err)
		}
		dirs = append(dirs, d)
		t.Cleanup(func() { _ = removeCgroup(d, 1) })
	}
	state := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestDeadBrokersCgroupsChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "AIRLOCK_CGJ_CHILD=1", "AIRLOCK_CGJ_PARENT="+parent, "AIRLOCK_CGJ_STATE="+state)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	defer func() { _ = cmd.Process.Kill(); <-exited }()
	mine := func() []string {
		var out []string
		for _, d := range dirs {
			m, _ := filepath.Glob(filepath.Join(d, "airlock-"+strconv.Itoa(cmd.Process.Pid)+"-*"))
			out = append(out, m...)
		}
		return out
	}
	// The child's sandbox runs once a process is in its memory cgroup.
	for running := false; !running; {
		select {
		case <-exited:
			t.Fatal("the child broker ended before its sandbox ran")
		case <-time.After(20 * time.Millisecond):
		}
		for _, d := range mine() {
			if len(procsOf(d)) > 0 {
				running = true
			}
		}
	}
	_ = cmd.Process.Kill()
	<-exited
	if len(mine()) == 0 {
		t.Fatal("the killed broker left no cgroup: the test proves nothing")
	}
	b, err := New(&Options{Executable: os.Args[0], StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if left := mine(); len(left) > 0 {
		t.Errorf("the next broker over the same state directory left the dead one's cgroups: %v", left)
	}
}

// TestDeadBrokersCgroupsChild is the broker TestDeadBrokersCgroupsSweptFromAnotherCgroup
// kills: its sandbox cgroups lie under AIRLOCK_CGJ_PARENT.
func TestDeadBrokersCgroupsChild(t *testing.T) {
	if os.Getenv("AIRLOCK_CGJ_CHILD") != "1" {
		t.Skip("runs only as the child of TestDeadBrokersCgroupsSweptFromAnotherCgroup")
	}
	b, err := New(&Options{Executable: os.Args[0], CgroupParent: os.Getenv("AIRLOCK_CGJ_PARENT"), StateDir: os.Getenv("AIRLOCK_CGJ_STATE")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = b.Run(context.Background(), &sandbox.Spec{Command: []string{"sleep", "987900"}, Env: []string{"PATH=/usr/bin:/bin"}, Limits: sandbox.Limits{Wall: time.Minute}})
	t.Fatalf("the run ended before the broker was killed: %v", err)
}
