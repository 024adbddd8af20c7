package cli

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestExecRemoteOutputIntoAClosedPipe: with the sandbox on remote hands,
// a reader of airlock exec's output that goes away (`airlock exec --remote
// ... -- CMD | head -1`) ends the command as it does locally: it meets the
// broken pipe, and airlock exits with its status. The broker dropped the
// output it could not write and the hands never heard of it: the command
// ran on, for ever without a time limit, its caller gone.
func TestExecRemoteOutputIntoAClosedPipe(t *testing.T) {
	airlock, err := exec.LookPath("airlock")
	if err != nil {
		t.Fatalf("the test binary is not on PATH as airlock: %v", err)
	}
	cmd := exec.Command(airlock, append(append([]string{"exec"}, execFlags()...), "--remote", "stdio:"+airlock+" tool-server --root .",
		"--", "sh", "-c", "echo ready; while sleep 0.1; do echo tick; done")...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "AIRLOCK_STATE_DIR="+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	lines := bufio.NewScanner(stdout)
	for lines.Scan() && strings.TrimSpace(lines.Text()) != "ready" {
	}
	stdout.Close()
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case <-waited:
	case <-time.After(60 * time.Second):
		t.Fatalf("airlock exec --remote still runs 60s after its output's reader left; stderr %q", &stderr)
	}
	ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if ws.Signaled() || ws.ExitStatus() != 128+int(syscall.SIGPIPE) {
		t.Errorf("airlock exec --remote ended %v, want exit %d (the command's SIGPIPE, as locally); stderr %q", cmd.ProcessState, 128+int(syscall.SIGPIPE), &stderr)
	}
}
