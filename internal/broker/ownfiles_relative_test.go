package broker

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/airlockhq/airlock/grant"
)

// TestRelativeOwnFileHidden: a token file named relative to the working
// directory (airlock tool-server --token-file tok, --remote-token-file
// tok) is hidden from a grant of that directory like an absolute one,
// instead of the session refusing to start with "airlock's own path
// "tok" is not absolute".
func TestRelativeOwnFileHidden(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tok := filepath.Join(dir, "tok")
	if err := os.WriteFile(tok, []byte("0123456789abcdef0123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	g, err := grant.Default(dir)
	if err != nil {
		t.Fatal(err)
	}
	gg, err := GuardGrant(g, filepath.Join(t.TempDir(), "records"), []string{"tok"})
	if err != nil {
		t.Fatalf("GuardGrant with the token file \"tok\": %v", err)
	}
	if d := gg.CheckPath(tok, false); d.Allowed {
		t.Errorf("the sandbox may read the token file %s (%s)", tok, d.Rule)
	}
}
