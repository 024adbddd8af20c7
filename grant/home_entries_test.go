package grant

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestHomeEntriesInsideHome: a read-write tree granted inside a home
// directory (~/.config, ~/.local) keeps what the home's protected entries
// name read-only, existing or not, as the home directory granted whole
// does; a read-write grant of one of them, or of a directory in one, is
// refused unless paths.writable_protected names it.
func TestHomeEntriesInsideHome(t *testing.T) {
	dir := fixture(t, "h/.bashrc", "h/.profile", "h/.config/nvim/init.lua", "h/.config/systemd/user/", "h/.local/share/", "h/.ssh/known_hosts")
	h := filepath.Join(dir, "h")
	t.Setenv("HOME", h)
	g, err := FromFlags(h, Flags{ReadWrite: []string{".config", ".local"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{".config/autostart/x.desktop", ".config/systemd/user/x.service", ".config/fish/config.fish", ".config/git/config", ".local/bin/git"} {
		if d := g.CheckPath(filepath.Join(h, p), true); d.Allowed {
			t.Errorf("writing ~/%s allowed, want it protected", p)
		}
	}
	for _, p := range []string{".config/nvim/init.lua", ".local/share/x"} {
		if d := g.CheckPath(filepath.Join(h, p), true); !d.Allowed {
			t.Errorf("writing ~/%s: %s", p, d.Reason)
		}
	}
	for _, rw := range []string{".config/systemd", ".config/systemd/user", ".ssh"} {
		_, err := FromFlags(h, Flags{ReadWrite: []string{rw}})
		if err == nil || !strings.Contains(err.Error(), "writable_protected") {
			t.Errorf("--rw ~/%s: %v, want a refusal", rw, err)
		}
		if _, err := FromFlags(h, Flags{ReadOnly: []string{rw}}); err != nil {
			t.Errorf("--ro ~/%s: %v", rw, err)
		}
	}
	name := ".config/systemd"
	if _, err := FromFlags(h, Flags{ReadWrite: []string{".config/systemd/user"}, WritableProtected: []string{name}}); err != nil {
		t.Errorf("--rw ~/.config/systemd/user with %s writable: %v", name, err)
	}
}
