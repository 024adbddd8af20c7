package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestNegativeDurationsRefused: a duration flag given a negative value is
// bad input, refused naming the flag, before anything runs. airlock exec
// --time -5s ran the command under the grant's time limit, as if the flag
// had not been given, and --idle-timeout, --shutdown-timeout and
// --heartbeat took a negative value just as silently.
func TestNegativeDurationsRefused(t *testing.T) {
	t.Setenv("AIRLOCK_STATE_DIR", t.TempDir())
	root := t.TempDir()
	for _, tc := range []struct {
		args []string
		flag string
		code int
	}{
		{[]string{"exec", "--root", root, "--time", "-5s", "--", "true"}, "--time", exitExecFailure},
		{[]string{"run", "--time", "-1m", "capsule.wasm"}, "--time", exitUsage},
		{[]string{"mcp", "--root", root, "--shutdown-timeout", "-1s"}, "--shutdown-timeout", exitUsage},
		{[]string{"serve", "--listen", "127.0.0.1:0", "--root", root, "--idle-timeout", "-5m"}, "--idle-timeout", exitUsage},
		{[]string{"tool-server", "--root", root, "--heartbeat", "-1s"}, "--heartbeat", exitUsage},
	} {
		t.Run(strings.Join(tc.args[:1], " ")+" "+tc.flag, func(t *testing.T) {
			// Cancelled: a command that took the flag would not run on.
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			var stdout, stderr bytes.Buffer
			code := Main(ctx, tc.args, strings.NewReader(""), &stdout, &stderr)
			if code != tc.code {
				t.Errorf("airlock %s: exit %d, want %d; stderr:\n%s", strings.Join(tc.args, " "), code, tc.code, &stderr)
			}
			if !strings.Contains(stderr.String(), tc.flag) || !strings.Contains(stderr.String(), "negative") {
				t.Errorf("airlock %s: stderr %q does not name %s as negative", strings.Join(tc.args, " "), &stderr, tc.flag)
			}
		})
	}
}
