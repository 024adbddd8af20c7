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
	"time"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/audit"
)

// TestExecOutputIntoAClosedPipe: when the reader of airlock exec's output
// goes away (`airlock exec -- yes | head -1`), the command meets the
// broken pipe as it would outside the sandbox, and airlock ends as a
// wrapper should: it records the call's outcome, puts the caller's terminal
// back, and exits with the command's status. (A write to the closed pipe
// used to kill airlock itself with SIGPIPE, status 141 from the shell, with
// the caller's terminal left raw, no echo, no line editing, no ^C, and the
// call recorded only as interrupted.)
func TestExecOutputIntoAClosedPipe(t *testing.T) {
	airlock, err := exec.LookPath("airlock")
	if err != nil {
		t.Fatalf("the test binary is not on PATH as airlock: %v", err)
	}
	for _, terminal := range []bool{false, true} {
		name := "stdin a pipe"
		if terminal {
			name = "stdin a terminal"
		}
		t.Run(name, func(t *testing.T) {
			state := t.TempDir()
			cmd := exec.Command(airlock, append(append([]string{"exec"}, execFlags()...), "--", "sh", "-c", "echo ready; exec yes")...)
			cmd.Dir = t.TempDir()
			cmd.Env = append(os.Environ(), "AIRLOCK_STATE_DIR="+state)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			var slave *os.File
			var before *unix.Termios
			if terminal {
				var master *os.File
				master, slave = openPTY(t)
				defer master.Close()
				defer slave.Close()
				if before, err = unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS); err != nil {
					t.Fatal(err)
				}
				readPTY(master) // the terminal's echo, if any, must not block
				cmd.Stdin = slave
			}
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
			if lines.Err() != nil {
				t.Fatal(lines.Err())
			}
			// The reader goes away, as head does after its first line.
			stdout.Close()
			waited := make(chan error, 1)
			go func() { waited <- cmd.Wait() }()
			select {
			case err = <-waited:
			case <-time.After(60 * time.Second):
				t.Fatalf("airlock exec still runs 60s after its output's reader left; stderr %q", &stderr)
			}
			if ee := (*exec.ExitError)(nil); err != nil && !errors.As(err, &ee) {
				t.Fatal(err)
			}
			ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
			if ws.Signaled() {
				t.Errorf("airlock was killed by %v instead of exiting with the command's status; stderr %q", ws.Signal(), &stderr)
			}
			if !terminal && ws.ExitStatus() != 128+int(syscall.SIGPIPE) {
				t.Errorf("exit %d, want %d: yes killed by SIGPIPE, as in a pipeline without airlock; stderr %q", ws.ExitStatus(), 128+int(syscall.SIGPIPE), &stderr)
			}
			if ws.ExitStatus() == exitExecFailure {
				t.Errorf("exit %d, airlock's own failure; stderr %q", ws.ExitStatus(), &stderr)
			}
			if terminal {
				after, err := unix.IoctlGetTermios(int(slave.Fd()), unix.TCGETS)
				if err != nil {
					t.Fatal(err)
				}
				if after.Lflag != before.Lflag || after.Iflag != before.Iflag || after.Oflag != before.Oflag {
					t.Errorf("the terminal is left changed: Lflag %#x, was %#x (ECHO|ICANON|ISIG off: raw)", after.Lflag, before.Lflag)
				}
			}
			var calls []audit.Record
			for _, r := range records(t, state) {
				if r.Kind == audit.KindCall {
					calls = append(calls, r)
				}
			}
			if len(calls) != 1 || calls[0].Class == audit.ClassInterrupted {
				t.Errorf("the call's records %+v, want one with its outcome", calls)
			}
		})
	}
}
