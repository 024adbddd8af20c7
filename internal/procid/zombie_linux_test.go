package procid

import (
	"os/exec"
	"testing"
	"time"
)

// TestZombieIsNotAlive: a process killed and not yet reaped by its parent
// (a zombie) does not run: its /proc entry and start time stay until it is
// reaped, and Alive took it for a live process, so the sweeps and the
// audit recovery of a later airlock left what a killed broker left.
func TestZombieIsNotAlive(t *testing.T) {
	cmd := exec.Command("sleep", "1000")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	id := Of(cmd.Process.Pid)
	if !id.Alive() {
		t.Fatalf("%q is not alive while it runs", id)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	for {
		f := StatFields(cmd.Process.Pid)
		if len(f) == 0 {
			t.Fatal("the killed process was reaped")
		}
		if f[0] == "Z" {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if id.Alive() {
		t.Errorf("%q, a zombie, is alive", id)
	}
}
