package broker

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/airlockhq/airlock/grant"
)

// TestRemoteCAKeptFromSandbox: the grant's remote.ca decides whom the
// next session's broker trusts as its hands (and sends the bearer token
// to): a sandbox that rewrote it, in a read-write tree, would have later
// sessions accept its own certificate authority. It stays read-only,
// like the grant file that names it, and the remote.token file stays
// hidden whoever builds the session.
func TestRemoteCAKeptFromSandbox(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"ca.pem": "-----BEGIN CERTIFICATE-----\n", "token": "0123456789abcdef01\n"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	text := "[paths]\nread_write = [\".\"]\n[remote]\nendpoint = \"wss://hands.example:8443\"\ntoken = \"file:token\"\nca = \"ca.pem\"\n"
	g, err := grant.Parse([]byte(text), "grant.toml", dir)
	if err != nil {
		t.Fatal(err)
	}
	gg, err := GuardGrant(g, filepath.Join(t.TempDir(), "records"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := gg.CheckPath(filepath.Join(dir, "ca.pem"), true); d.Allowed {
		t.Errorf("the sandbox may rewrite the remote CA %s/ca.pem (%s)", dir, d.Rule)
	}
	if d := gg.CheckPath(filepath.Join(dir, "token"), false); d.Allowed {
		t.Errorf("the sandbox may read the remote token %s/token (%s)", dir, d.Rule)
	}
}
