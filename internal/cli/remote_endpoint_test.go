package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRemoteEndpointPasswordNeverEchoed: a --remote endpoint with user
// information (a password in the URL) is refused, and no message names
// the password, whether the refusal comes before the token is found or
// after.
func TestRemoteEndpointPasswordNeverEchoed(t *testing.T) {
	runEnv(t)
	ws := t.TempDir()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("tok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const ep = "wss://agent:hunter2@vault@127.0.0.1:1"
	for _, args := range [][]string{
		{"call", "--remote", ep, "read_file", `{"path": "x"}`},
		{"call", "--remote", ep, "--remote-token-file", tokenFile, "read_file", `{"path": "x"}`},
	} {
		t.Setenv("AIRLOCK_REMOTE_TOKEN", "")
		code, stdout, stderr := runCLI(t, ws, args...)
		if code == 0 {
			t.Errorf("%q: exit 0, want a refusal", args)
		}
		for _, part := range []string{"hunter2", "agent", "vault"} {
			if strings.Contains(stdout+stderr, part) {
				t.Errorf("%q: the output names %q of the endpoint's user information:\n%s%s", args, part, stdout, stderr)
			}
		}
		if !strings.Contains(stderr, "wss://127.0.0.1:1") {
			t.Errorf("%q: the refusal does not name the endpoint without its user information:\n%s", args, stderr)
		}
	}
}
