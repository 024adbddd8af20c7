package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// TestKilledBrokersEgressDirectoryIsSwept: a broker killed with SIGKILL
// while a call that may reach the network runs cannot remove its egress
// proxy's socket directory, and the next start of airlock over the same
// state removes it (hostile case 53). Before, nothing ever did: every such
// kill left a directory with a socket in /dev/shm for good.
func TestKilledBrokersEgressDirectoryIsSwept(t *testing.T) {
	airlock, err := exec.LookPath("airlock")
	if err != nil {
		t.Fatalf("the test binary is not on PATH as airlock: %v", err)
	}
	work, state := t.TempDir(), t.TempDir()
	env := append(os.Environ(), "AIRLOCK_STATE_DIR="+state)
	cmd := exec.Command(airlock, "call", "--allow-host", "example.com", "shell", `{"command": "touch started; exec sleep 300"}`)
	cmd.Dir, cmd.Env = work, env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	waitForFile(t, filepath.Join(work, "started"), exited, &stderr)
	sockets := unixSocketsOf(t, cmd.Process.Pid)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	for _, s := range sockets {
		if _, err := os.Lstat(filepath.Dir(s)); err != nil {
			t.Fatalf("%s is gone before any airlock started again: %v", filepath.Dir(s), err)
		}
	}

	next := exec.Command(airlock, "call", "shell", `{"command": "true"}`)
	next.Dir, next.Env = work, env
	if out, err := next.CombinedOutput(); err != nil {
		t.Fatalf("the next airlock call: %v\n%s", err, out)
	}
	for _, s := range sockets {
		if _, err := os.Lstat(filepath.Dir(s)); err == nil {
			t.Errorf("the next start of airlock left %s, the killed broker's egress directory", filepath.Dir(s))
			os.RemoveAll(filepath.Dir(s))
		}
	}
}
