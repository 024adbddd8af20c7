package cli

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestOutputThatCannotBeWritten: a command whose standard output cannot
// be written (/dev/full: a full disk under `airlock call ... > result`)
// says so on stderr and exits 1. It used to exit 0 with nothing said, so a
// script took a lost or cut result for a call that completed.
func TestOutputThatCannotBeWritten(t *testing.T) {
	airlock, err := exec.LookPath("airlock")
	if err != nil {
		t.Fatalf("the test binary is not on PATH as airlock: %v", err)
	}
	for _, args := range [][]string{
		{"call", "shell", `{"command": "echo hello"}`},
		{"call", "--json", "read_file", `{"path": "."}`},
		{"tools"},
		{"version"},
		{"help"},
		{"--help"},
		{"check", "grant.toml", "read_file", `{"path": "x"}`},
		// exec's output is the command's: airlock's own status, 125,
		// when the command exited 0 (echo run directly exits 1).
		{"exec", "--", "echo", "hello"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
			if err != nil {
				t.Skipf("no /dev/full: %v", err)
			}
			defer full.Close()
			work := t.TempDir()
			if err := os.WriteFile(work+"/grant.toml", []byte("[paths]\nread_write = [\".\"]\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(airlock, args...)
			cmd.Dir = work
			cmd.Env = append(os.Environ(), "AIRLOCK_STATE_DIR="+t.TempDir())
			var stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = full, &stderr
			_ = cmd.Run()
			want := exitFailure
			if args[0] == "exec" {
				want = exitExecFailure
			}
			if got := cmd.ProcessState.ExitCode(); got != want {
				t.Errorf("airlock %s exited %d with its output lost, want %d; stderr %q", args[0], got, want, stderr.String())
			}
			if !strings.Contains(stderr.String(), "no space left on device") {
				t.Errorf("stderr %q does not say the output was lost", stderr.String())
			}
		})
	}
}
