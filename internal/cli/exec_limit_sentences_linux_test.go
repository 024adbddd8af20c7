package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestExecLimitSentencesSayWhatHappened: what airlock exec says on stderr
// about a limit matches what happened to the command. A command that hits
// its process limit is never killed for it (the kernel refuses the fork, and
// the command goes on or gives up), and one whose child the memory limit
// killed may exit on its own: "and was killed" would tell the user airlock
// killed a command that in fact exited with its own status.
func TestExecLimitSentencesSayWhatHappened(t *testing.T) {
	t.Setenv("AIRLOCK_STATE_DIR", t.TempDir())
	for _, tt := range []struct {
		name   string
		flags  []string
		script string
		status int
		want   string
	}{
		{"processes", []string{"--pids", "4"},
			`for i in 1 2 3 4 5 6 7 8; do sleep 2 & done; wait; exit 2`, 2,
			"hit its process limit (4): a fork was refused"},
		{"memory", []string{"--memory", "64MiB"},
			`head -c 300M /dev/zero | tail; exit 3`, 3,
			"hit its memory limit (64MiB): a process was killed"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append([]string{"exec", "--root", t.TempDir()}, execFlags()...)
			args = append(append(args, tt.flags...), "--", "sh", "-c", tt.script)
			code := Main(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
			if code != tt.status {
				t.Fatalf("exit %d, want the command's own %d; stderr:\n%s", code, tt.status, &stderr)
			}
			if strings.Contains(stderr.String(), "and was killed") || !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("the command exited on its own with %d, but stderr says:\n%s\nwant a line with %q and none saying it was killed", code, &stderr, tt.want)
			}
		})
	}
}
