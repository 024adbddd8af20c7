package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExecHomeSubdirKeepsHomeEntries runs `airlock exec --rw ~/.config`
// (and --rw ~/.local) through the native sandbox and checks that what a
// home directory's protected entries name stays read-only there too: the
// desktop's autostart programs, systemd --user units, fish's
// configuration, ~/.local/bin. They were protected only in a tree that is
// the home directory, matched from its top, so granting the directory of
// the home that holds them left them writable: a command wrote
// ~/.config/autostart/x.desktop and ~/.config/systemd/user/x.service,
// which run at the user's next login outside any sandbox (red team).
func TestExecHomeSubdirKeepsHomeEntries(t *testing.T) {
	t.Setenv("AIRLOCK_STATE_DIR", t.TempDir())
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(base, "home", "u")
	for _, d := range []string{"proj", ".config/autostart", ".config/nvim", ".local/share", ".local/bin"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{".bashrc", ".profile"} {
		if err := os.WriteFile(filepath.Join(home, f), []byte("# rc\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("HOME", home)
	t.Chdir(filepath.Join(home, "proj"))
	targets := []string{".config/autostart/x.desktop", ".config/systemd/user/x.service", ".config/fish/config.fish", ".local/bin/git"}
	script := `cd "$H"; mkdir -p .config/systemd/user .config/fish 2>/dev/null; for f in ` + strings.Join(targets, " ") +
		`; do echo 'Exec=touch /tmp/pwned' > $f 2>/dev/null && echo "WROTE $f"; done; echo ok > .config/nvim/ok && echo NVIM-OK; echo ok > .local/share/ok && echo SHARE-OK; echo END`
	var stdout, stderr bytes.Buffer
	args := append(append([]string{"exec", "--rw", filepath.Join(home, ".config"), "--rw", filepath.Join(home, ".local")}, execFlags()...),
		"--env", "H="+home, "--", "sh", "-c", script)
	code := Main(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
	out := stdout.String() + stderr.String()
	if !strings.Contains(out, "END") || !strings.Contains(out, "NVIM-OK") || !strings.Contains(out, "SHARE-OK") {
		t.Fatalf("exit %d; the command did not run, or could not write the granted directories:\n%s", code, out)
	}
	for _, f := range targets {
		if strings.Contains(out, "WROTE "+f) {
			t.Errorf("the sandboxed command wrote ~/%s", f)
		}
		if _, err := os.Stat(filepath.Join(home, f)); err == nil {
			if b, _ := os.ReadFile(filepath.Join(home, f)); len(b) > 0 {
				t.Errorf("~/%s holds %q on the host", f, b)
			}
		}
	}
}
