package procid

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
)

func TestSelfAlive(t *testing.T) {
	id := Self()
	if id == "" || !id.Alive() || id.PID() == 0 {
		t.Fatalf("Self() = %q, Alive %v", id, id.Alive())
	}
}

func TestDeadProcess(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Start(); err != nil {
		t.Skip("no true(1):", err)
	}
	id := Of(cmd.Process.Pid)
	cmd.Wait()
	if id == "" {
		t.Skip("the process ended before its id was read")
	}
	if id.Alive() {
		t.Fatalf("%q is alive after it was reaped", id)
	}
	if ID("12345678-1").Alive() || ID("junk").Alive() || ID("").Alive() {
		t.Fatal("a made-up id is alive")
	}
}

// TestReusedPid: this process's pid with another start time names a
// process that is gone (its pid was reused by this one).
func TestReusedPid(t *testing.T) {
	other := ID(strconv.Itoa(os.Getpid()) + "-1")
	if other == Self() {
		t.Skip("this process started at tick 1")
	}
	if other.Alive() {
		t.Fatalf("%q counts as alive, though this process has its pid and another start time", other)
	}
}
