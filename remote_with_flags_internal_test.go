package airlock

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAllowUnenforcedLimitsKeepsTheGrantsRemote: Options.AllowUnenforcedLimits
// on a grant whose [remote] table names hands widens the grant's limits and
// nothing else: the calls still run on those hands, and the hands' token
// file inside the granted tree stays hidden from every sandbox. Widening
// the grant used to drop its [remote] table, so the calls ran on this host
// instead, where a sandbox could read the hands' bearer token.
func TestAllowUnenforcedLimitsKeepsTheGrantsRemote(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const token = "hands-bearer-token-allow-unenforced-0123"
	if err := os.WriteFile(filepath.Join(dir, "hands.token"), []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv, ln := serveHands(t, dir, token)

	gf := filepath.Join(dir, "grant.toml")
	if err := os.WriteFile(gf, []byte(fmt.Sprintf(`[paths]
read_write = ["."]
[remote]
endpoint = "ws://%s"
token = "file:hands.token"
`, ln.Addr())), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := Open(&Options{GrantFile: gf, RecordsDir: t.TempDir(), Pool: -1, AllowUnenforcedLimits: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if got := s.s.Grant().Remote().Endpoint; got != "ws://"+ln.Addr().String() {
		t.Errorf("the session's grant names the hands %q, want %q", got, "ws://"+ln.Addr().String())
	}
	for _, c := range []struct {
		tool string
		args map[string]any
	}{
		{"read_file", map[string]any{"path": "hands.token"}},
		{"shell", map[string]any{"command": "cat hands.token; true"}},
	} {
		res, err := s.Call(context.Background(), c.tool, c.args)
		if err != nil {
			t.Fatalf("%s: %v", c.tool, err)
		}
		if strings.Contains(res.Text, token) {
			t.Errorf("%s read the hands' token:\n%s", c.tool, res.Text)
		}
	}
	if srv.Runs() == 0 {
		t.Error("no call ran on the hands the grant names")
	}
}
