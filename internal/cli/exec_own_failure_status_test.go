package cli

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestExecOwnFailuresAreNotTheCommandsStatus: when airlock exec fails
// before the command runs (bad usage, a grant that does not load or that
// refuses a path, an unknown backend), it exits 125, as it does when the
// sandbox cannot be built, and as env, timeout, podman and docker run do:
// never a status the command itself could have returned. Exiting 1 or 2
// made `airlock exec --ro "$DIR" -- grep -q x f` with a mistyped directory
// read as "no match" (grep's 1), and a usage error as grep's own error (2).
func TestExecOwnFailuresAreNotTheCommandsStatus(t *testing.T) {
	t.Setenv("AIRLOCK_STATE_DIR", t.TempDir())
	root := t.TempDir()
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"a read-only path that does not exist", []string{"--ro", filepath.Join(root, "no-such-dir"), "--", "true"}},
		{"a grant file that does not exist", []string{"--grant", filepath.Join(root, "no-such.toml"), "--", "true"}},
		{"an unknown backend", []string{"--backend", "bogus", "--", "true"}},
		{"a bad size", []string{"--memory", "lots", "--", "true"}},
		{"an unknown flag", []string{"--no-such-flag", "--", "true"}},
		{"no command", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append([]string{"exec", "--root", root}, tt.args...)
			code := Main(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
			if code != 125 {
				t.Errorf("airlock %s: exit %d, want 125 (airlock's own failure); stderr:\n%s", strings.Join(args, " "), code, &stderr)
			}
			if !strings.HasPrefix(stderr.String(), "airlock exec: ") {
				t.Errorf("stderr does not say what failed: %q", &stderr)
			}
		})
	}
	// -h is not a failure.
	var stdout, stderr bytes.Buffer
	if code := Main(context.Background(), []string{"exec", "-h"}, strings.NewReader(""), &stdout, &stderr); code != 0 {
		t.Errorf("airlock exec -h: exit %d, want 0", code)
	}
}
