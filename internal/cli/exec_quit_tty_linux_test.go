package cli

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestExecQuitRestoresTheTerminal: SIGQUIT sent to airlock exec that runs
// a command on the caller's terminal kills the sandbox (which passes on no
// SIGQUIT), says so, and puts the terminal back as airlock found it. (It
// used to kill airlock with a Go stack dump and status 2, leaving the
// caller's terminal raw: no echo, no line editing, no ^C, until the user
// typed `stty sane` blind.)
func TestExecQuitRestoresTheTerminal(t *testing.T) {
	airlock, err := exec.LookPath("airlock")
	if err != nil {
		t.Fatalf("the test binary is not on PATH as airlock: %v", err)
	}
	master, slave := openPTY(t)
	defer master.Close()
	defer slave.Close()
	before, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	out := readPTY(master)
	var stderr bytes.Buffer
	cmd := exec.Command(airlock, append(append([]string{"exec"}, execFlags()...), "--", "sh", "-c", "echo ready; sleep 600")...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "AIRLOCK_STATE_DIR="+t.TempDir())
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	out.waitFor(t, "ready")
	if err := cmd.Process.Signal(syscall.SIGQUIT); err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err = <-waited:
	case <-time.After(20 * time.Second):
		t.Fatalf("airlock exec still runs 20s after SIGQUIT; stderr %q", &stderr)
	}
	if ee := (*exec.ExitError)(nil); err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	after, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
	if err != nil {
		t.Fatal(err)
	}
	if after.Lflag != before.Lflag || after.Iflag != before.Iflag || after.Oflag != before.Oflag {
		t.Errorf("after SIGQUIT (%v) the terminal is left changed: Lflag %#x, was %#x (ECHO|ICANON|ISIG off: raw)", cmd.ProcessState, after.Lflag, before.Lflag)
	}
	if code := cmd.ProcessState.ExitCode(); code != 128+int(syscall.SIGKILL) {
		t.Errorf("exit %d (%v), want %d: the sandbox killed", code, cmd.ProcessState, 128+int(syscall.SIGKILL))
	}
	if !strings.Contains(stderr.String(), "airlock exec: quit: killing sh") {
		t.Errorf("stderr does not say SIGQUIT killed the command: %.300q", &stderr)
	}
	if strings.Contains(stderr.String(), "goroutine ") {
		t.Errorf("airlock died with a stack dump: %.300s", &stderr)
	}
}
