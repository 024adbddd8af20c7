package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExecCommandThatCannotRunStatus: a command that is found but cannot be
// run (a file without execute permission, a directory) exits 126, and one
// that is not there 127, as sh, env, timeout and docker run say: a script
// tells "not installed" from "installed but broken" by it. Every command
// named with a slash that could not run exited 127, "not found", whatever
// the reason.
func TestExecCommandThatCannotRunStatus(t *testing.T) {
	t.Setenv("AIRLOCK_STATE_DIR", t.TempDir())
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.WriteFile(filepath.Join(dir, "noexec"), []byte("#!/bin/sh\necho ran\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "adir"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		cmd  string
		want int
	}{
		{"./noexec", 126},
		{filepath.Join(dir, "noexec"), 126},
		{"./adir", 126},
		{"./no-such-file", 127},
		{"no-such-command-anywhere", 127},
	} {
		t.Run(tt.cmd, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			env := &Env{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr, Getenv: os.Getenv}
			code := commandByName("exec").run(context.Background(), env, append(execFlags(), "--", tt.cmd))
			if code != tt.want {
				t.Errorf("airlock exec -- %s: exit %d, want %d; stderr:\n%s", tt.cmd, code, tt.want, &stderr)
			}
		})
	}
}
