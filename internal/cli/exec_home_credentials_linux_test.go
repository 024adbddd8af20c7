package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// credentialCanary is what the home directory's credential files hold in
// TestExecHomeCredentialsHidden; no output may show it.
const credentialCanary = "CANARY-id_rsa-4b1d9e"

// TestExecHomeCredentialsHidden runs `airlock exec` with no grant in a
// directory that looks like a home directory (which grants it read-write),
// through the native sandbox, and checks that the user's credentials are
// hidden from the command (cat .ssh/id_rsa finds no such file) while the
// home directory's other files stay readable; and that a credential store
// granted by name (--ro .ssh) is shown. A credential file linked in from a
// dotfiles directory shows nothing either.
func TestExecHomeCredentialsHidden(t *testing.T) {
	t.Setenv("AIRLOCK_STATE_DIR", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(base, "home", "u")
	for p, c := range map[string]string{
		".ssh/id_rsa": credentialCanary, ".aws/credentials": credentialCanary, ".netrc": credentialCanary,
		".config/gh/hosts.yml": credentialCanary, ".bashrc": "# rc BASHRC-OK\n", ".profile": "# profile\n",
		"proj/main.go": "package main\n", "dotfiles/git-credentials": credentialCanary,
		".minikube/profiles/minikube/client.key": credentialCanary, ".config/helm/repositories.yaml": credentialCanary,
		".claude.json": credentialCanary,
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(home, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, p), []byte(c), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// A credential file linked in from a dotfiles directory (stow).
	if err := os.Symlink("dotfiles/git-credentials", filepath.Join(home, ".git-credentials")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(home)
	run := func(flags ...string) (int, string) {
		var stdout, stderr bytes.Buffer
		args := append(append(append([]string{"exec"}, execFlags()...), flags...), "--", "sh", "-c",
			`cat .bashrc; for f in .ssh/id_rsa .aws/credentials .netrc .config/gh/hosts.yml .git-credentials dotfiles/git-credentials .minikube/profiles/minikube/client.key .config/helm/repositories.yaml .claude.json; do cat $f || echo "HIDDEN $f"; done; ls -a .ssh; echo END`)
		code := Main(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
		return code, stdout.String() + stderr.String()
	}
	code, out := run()
	if !strings.Contains(out, "END") || !strings.Contains(out, "BASHRC-OK") {
		t.Fatalf("exit %d; the command did not run, or could not read the home directory:\n%s", code, out)
	}
	if strings.Contains(out, credentialCanary) {
		t.Errorf("the sandboxed command read the user's credentials:\n%s", out)
	}
	// (What the linked file leads to is both denied and kept read-only as
	// a start-up file's target: it reads as empty, which shows nothing.)
	for _, f := range []string{".ssh/id_rsa", ".aws/credentials", ".netrc", ".config/gh/hosts.yml"} {
		if !strings.Contains(out, "HIDDEN "+f) {
			t.Errorf("%s was not hidden:\n%s", f, out)
		}
	}
	// Granted by name, .ssh is shown; the others stay hidden.
	code, out = run("--ro", filepath.Join(home, ".ssh"))
	if !strings.Contains(out, "END") || !strings.Contains(out, credentialCanary) || !strings.Contains(out, "HIDDEN .aws/credentials") {
		t.Errorf("exit %d; with --ro .ssh, want .ssh readable and .aws hidden:\n%s", code, out)
	}
}
