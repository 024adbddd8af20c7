package cli

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
)

// execChild is `airlock exec` running as a real child process.
type execChild struct {
	cmd    *exec.Cmd
	lines  *bufio.Scanner
	out    strings.Builder // every stdout line read so far
	stderr bytes.Buffer
}

// startExec starts `airlock exec -- sh -c script` (the test binary serves as
// airlock; see TestMain) and waits until the command has printed "ready".
func startExec(t *testing.T, script string) *execChild {
	t.Helper()
	airlock, err := exec.LookPath("airlock")
	if err != nil {
		t.Fatalf("the test binary is not on PATH as airlock: %v", err)
	}
	c := &execChild{cmd: exec.Command(airlock, "exec", "--", "sh", "-c", script)}
	c.cmd.Dir = t.TempDir()
	c.cmd.Env = append(os.Environ(), "AIRLOCK_STATE_DIR="+t.TempDir())
	c.cmd.Stderr = &c.stderr
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if c.cmd.ProcessState == nil {
			_ = c.cmd.Process.Kill()
			_ = c.cmd.Wait()
		}
	})
	c.lines = bufio.NewScanner(stdout)
	c.waitFor(t, "ready")
	return c
}

// waitFor reads stdout up to a line equal to want.
func (c *execChild) waitFor(t *testing.T, want string) {
	t.Helper()
	for c.lines.Scan() {
		c.out.WriteString(c.lines.Text() + "\n")
		if c.lines.Text() == want {
			return
		}
	}
	_ = c.cmd.Wait()
	t.Fatalf("airlock exec ended (%v) before printing %q; stdout %q, stderr %q", c.cmd.ProcessState, want, c.out.String(), c.stderr.String())
}

// wait reads the rest of stdout and returns airlock's exit status.
func (c *execChild) wait(t *testing.T) int {
	t.Helper()
	for c.lines.Scan() {
		c.out.WriteString(c.lines.Text() + "\n")
	}
	err := c.cmd.Wait()
	if ee := (*exec.ExitError)(nil); err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return c.cmd.ProcessState.ExitCode()
}

// TestExecForwardsSignals: SIGTERM, SIGHUP and SIGINT sent to airlock exec
// reach the command, whose trap runs; airlock then exits with the command's
// status, or 128+N when the signal killed it. (They used to cancel the
// sandbox: the trap never ran and airlock exited 125, "context canceled",
// or, for SIGINT, died of it.)
func TestExecForwardsSignals(t *testing.T) {
	const loop = `echo ready; while :; do sleep 0.1; done`
	tests := []struct {
		sig    syscall.Signal
		trap   bool
		status int
	}{
		{syscall.SIGTERM, true, 7},
		{syscall.SIGHUP, true, 7},
		{syscall.SIGINT, true, 7},
		{syscall.SIGTERM, false, 128 + 15},
		{syscall.SIGHUP, false, 128 + 1},
		{syscall.SIGINT, false, 128 + 2},
	}
	for _, tt := range tests {
		name := strings.TrimPrefix(tt.sig.String(), "signal ")
		script := loop
		if tt.trap {
			short := map[syscall.Signal]string{syscall.SIGTERM: "TERM", syscall.SIGHUP: "HUP", syscall.SIGINT: "INT"}[tt.sig]
			script = `trap "echo got ` + short + `; exit 7" ` + short + `; ` + loop
			name += " trapped"
		}
		t.Run(name, func(t *testing.T) {
			c := startExec(t, script)
			if err := c.cmd.Process.Signal(tt.sig); err != nil {
				t.Fatal(err)
			}
			status := c.wait(t)
			if status != tt.status {
				t.Errorf("airlock exited %d, want %d; stdout %q, stderr %q", status, tt.status, c.out.String(), c.stderr.String())
			}
			if tt.trap && !strings.Contains(c.out.String(), "got ") {
				t.Errorf("the trap did not run: stdout %q, stderr %q", c.out.String(), c.stderr.String())
			}
			// (The shell may say "Terminated" of the sleep that SIGTERM,
			// which every process of the sandbox hears, ended.)
			if strings.Contains(c.stderr.String(), "airlock") {
				t.Errorf("stderr %q, want nothing from airlock", c.stderr.String())
			}
		})
	}
}

// TestExecSecondSignalKills: a command that ignores the first signal is
// killed by the second; airlock says so and exits 128+9.
func TestExecSecondSignalKills(t *testing.T) {
	c := startExec(t, `trap "echo got TERM" TERM; echo ready; while :; do sleep 0.1; done`)
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	c.waitFor(t, "got TERM")
	if err := c.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if status := c.wait(t); status != 128+9 {
		t.Errorf("airlock exited %d, want %d; stdout %q, stderr %q", status, 128+9, c.out.String(), c.stderr.String())
	}
	if !strings.Contains(c.stderr.String(), "second signal") {
		t.Errorf("stderr %q does not say why the command was killed", c.stderr.String())
	}
}
