package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExecAgentCredentialsHidden runs `airlock exec` with no grant in a
// directory that looks like a home directory, through the native sandbox,
// and checks that the credentials of the agents airlock fronts (Claude
// Code's, Codex's, Gemini CLI's, Copilot's) and of the other programs that
// keep a token or password at a fixed place in a home directory are hidden
// from the command, as .ssh is: the agent's own keys stay outside the
// sandbox (red team: a command read ~/.claude/.credentials.json and
// ~/.codex/auth.json from a granted home directory).
func TestExecAgentCredentialsHidden(t *testing.T) {
	t.Setenv("AIRLOCK_STATE_DIR", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(base, "home", "u")
	creds := []string{
		".claude/.credentials.json",
		".codex/auth.json",
		".gemini/oauth_creds.json",
		".gemini/.env",
		".aider.conf.yml",
		".config/github-copilot/apps.json",
		".config/containers/auth.json",
		".pgpass",
		".my.cnf",
		".config/rclone/rclone.conf",
		".s3cfg",
		".boto",
		".cache/huggingface/token",
		".huggingface/token",
		".config/hub",
		".config/doctl/config.yaml",
		".composer/auth.json",
		".config/composer/auth.json",
		".terraformrc",
		".fly/config.yml",
		".oci/config",
	}
	files := map[string]string{".bashrc": "# rc BASHRC-OK\n", ".profile": "# profile\n", ".claude/settings.json": "{} SETTINGS-OK\n"}
	for _, c := range creds {
		files[c] = credentialCanary
	}
	for p, c := range files {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(home, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, p), []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Chdir(home)
	var stdout, stderr bytes.Buffer
	script := "cat .bashrc .claude/settings.json; for f in " + strings.Join(creds, " ") + `; do cat $f || echo "HIDDEN $f"; done; echo END`
	args := append(append([]string{"exec"}, execFlags()...), "--", "sh", "-c", script)
	code := Main(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
	out := stdout.String() + stderr.String()
	if !strings.Contains(out, "END") || !strings.Contains(out, "BASHRC-OK") || !strings.Contains(out, "SETTINGS-OK") {
		t.Fatalf("exit %d; the command did not run, or could not read the home directory:\n%s", code, out)
	}
	for _, c := range creds {
		if !strings.Contains(out, "HIDDEN "+c) {
			t.Errorf("%s was read by the sandboxed command", c)
		}
	}
	if strings.Contains(out, credentialCanary) {
		t.Errorf("the sandboxed command read the agent's or the user's credentials:\n%s", out)
	}
}
