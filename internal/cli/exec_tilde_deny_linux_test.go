package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExecGrantTildePathRefused runs `airlock exec --grant` with a grant
// whose paths.deny names "~/secret.txt", from the home directory that
// holds secret.txt, through the native sandbox. A grant's relative paths
// start from its file's directory and no shell expands "~" in a TOML
// string, so the deny named a "~" directory that does not exist and the
// command read the file the user meant to hide (red team). A grant path
// that starts with "~" is refused, saying to write it absolute.
func TestExecGrantTildePathRefused(t *testing.T) {
	t.Setenv("AIRLOCK_STATE_DIR", t.TempDir())
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	const canary = "CANARY-tilde-deny-5e21"
	for p, c := range map[string]string{
		"secret.txt": canary,
		"grant.toml": "[paths]\nread_write = [\".\"]\ndeny = [\"~/secret.txt\"]\n",
	} {
		if err := os.WriteFile(filepath.Join(home, p), []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(home)
	var stdout, stderr bytes.Buffer
	args := append(append([]string{"exec", "--grant", filepath.Join(home, "grant.toml")}, execFlags()...), "--", "cat", "secret.txt")
	code := Main(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
	out := stdout.String() + stderr.String()
	if strings.Contains(out, canary) {
		t.Fatalf("exit %d; the command read the file the grant denies as ~/secret.txt:\n%s", code, out)
	}
	if code != exitExecFailure || !strings.Contains(out, `"~/secret.txt"`) || !strings.Contains(out, "absolute") {
		t.Errorf("exit %d; want the grant refused, naming ~/secret.txt and saying to write it absolute:\n%s", code, out)
	}
}
