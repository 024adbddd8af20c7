package airlock

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGoAPIHidesTheRemoteTokenFile: a grant whose [remote] token is a file
// inside a granted tree keeps that file from the session's sandboxes, as
// airlock call and exec do (the CLI's remote flags add it to the files no
// sandbox may see): a call that could read the hands' bearer token could
// hand it to anyone who can reach them.
func TestGoAPIHidesTheRemoteTokenFile(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const token = "hands-bearer-token-0123456789"
	if err := os.WriteFile(filepath.Join(dir, "hands.token"), []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv, ln := serveHands(t, dir, token)

	gf := filepath.Join(dir, "grant.toml")
	if err := os.WriteFile(gf, []byte(fmt.Sprintf(`[paths]
read_write = ["."]
[limits]
unenforced = "allow"
[remote]
endpoint = "ws://%s"
token = "file:hands.token"
`, ln.Addr())), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Open(&Options{GrantFile: gf, RecordsDir: t.TempDir(), Pool: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"read_file", map[string]any{"path": "hands.token"}},
		{"grep", map[string]any{"pattern": "bearer", "output_mode": "content"}},
		{"shell", map[string]any{"command": "cat hands.token; true"}},
	} {
		res, err := s.Call(context.Background(), c.tool, c.args)
		if err != nil {
			t.Fatalf("%s: %v", c.tool, err)
		}
		if strings.Contains(res.Text, token) {
			t.Errorf("%s read the hands' token:\n%s", c.tool, res.Text)
		}
		if c.tool == "read_file" && !res.Refused {
			t.Errorf("read_file of the token file was not refused:\n%s", res.Text)
		}
	}
	if srv.Runs() == 0 {
		t.Fatal("no call ran on the hands")
	}
}
