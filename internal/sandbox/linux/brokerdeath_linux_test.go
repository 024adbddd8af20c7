package linux_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/linux"
)

// Hostile case 53: when the broker is killed mid-run, the sandbox dies
// with it (Pdeathsig on the init, then the PID namespace), and the next
// New sweeps the dead broker's cgroups.
func TestBrokerDeath(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestBrokerChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "AIRLOCK_BROKER_CHILD=1")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for len(procsMatching("987800")) == 0 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("the child broker's sandbox never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Kill()
	cmd.Wait()
	waitNoProcs(t, "987800")
	if _, err := linux.New(&linux.Options{Executable: os.Args[0], Cgroups: linux.CgroupsOptional}); err != nil {
		t.Fatal(err)
	}
	left, _ := filepath.Glob("/sys/fs/cgroup/*/*/*/airlock-" + strconv.Itoa(cmd.Process.Pid) + "-*")
	more, _ := filepath.Glob("/sys/fs/cgroup/*/airlock-" + strconv.Itoa(cmd.Process.Pid) + "-*")
	if len(left)+len(more) != 0 {
		t.Fatalf("dead broker's cgroups not swept: %v %v", left, more)
	}
}

// TestBrokerChild is the broker killed by TestBrokerDeath.
func TestBrokerChild(t *testing.T) {
	if os.Getenv("AIRLOCK_BROKER_CHILD") != "1" {
		t.Skip("runs only as the child of TestBrokerDeath")
	}
	run(t, &sandbox.Spec{Limits: sandbox.Limits{Wall: 60 * time.Second}, Command: []string{"sleep", "987800"}})
}
