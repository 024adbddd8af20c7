package grant

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// homeCredentialFixture is a directory that looks like a home directory,
// holding credentials of several kinds (one through a symlink into a
// dotfiles directory of the home directory itself).
var homeCredentialFixture = []string{
	".bashrc", ".profile", "proj/main.go",
	".ssh/id_rsa", ".ssh/config", ".aws/credentials", ".netrc -> dotfiles/netrc", "dotfiles/netrc",
	".git-credentials", ".docker/config.json", ".docker/other.json", ".config/gh/hosts.yml", ".kube/config",
	".config/nvim/init.lua",
}

// credentialsOf returns the fixture's credential paths a reader must not
// see, in dir.
func credentialsOf(dir string) []string {
	var out []string
	for _, n := range []string{".ssh/id_rsa", ".aws/credentials", ".netrc", ".git-credentials", ".docker/config.json", ".config/gh/hosts.yml", ".kube/config"} {
		out = append(out, filepath.Join(dir, n))
	}
	return out
}

// TestHomeCredentialsHidden checks that a home directory a grant reaches,
// read-write or read-only, granted itself or as a parent, has its
// credential stores hidden (denied as paths.deny would), with a refusal
// saying how to grant one, while its other files stay readable.
func TestHomeCredentialsHidden(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	for _, tt := range []struct {
		name  string
		flags func(home string) Flags
	}{
		{"cwd read-write", func(string) Flags { return Flags{} }},
		{"read-only", func(home string) Flags { return Flags{ReadOnly: []string{home}} }},
		{"parent read-only", func(home string) Flags { return Flags{ReadOnly: []string{filepath.Dir(home)}} }},
		{"parent read-write", func(home string) Flags { return Flags{ReadWrite: []string{filepath.Dir(home)}} }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			entries := make([]string, len(homeCredentialFixture))
			for i, e := range homeCredentialFixture {
				entries[i] = "home/u/" + strings.ReplaceAll(e, "-> dotfiles", "-> $T/home/u/dotfiles")
			}
			home := filepath.Join(fixture(t, entries...), "home", "u")
			g, err := FromFlags(home, tt.flags(home))
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range credentialsOf(home) {
				d := g.CheckPath(p, false)
				if d.Allowed {
					t.Errorf("reading %s is allowed, want it hidden", p)
					continue
				}
				if !strings.Contains(d.Reason, "credential") || !strings.Contains(d.Reason, "grant it explicitly") || strings.Contains(d.Reason, fileContent) {
					t.Errorf("reading %s: refusal %q, want one naming a credential store and how to grant it", p, d.Reason)
				}
			}
			masks := g.Masks()
			for _, m := range []string{".ssh", ".aws", "dotfiles/netrc", ".git-credentials", ".docker/config.json", ".config/gh", ".kube"} {
				if !slices.Contains(masks, filepath.Join(home, m)) {
					t.Errorf("masks %v lack %s", masks, m)
				}
			}
			for _, p := range []string{"proj/main.go", ".docker/other.json", ".config/nvim/init.lua", ".bashrc"} {
				if d := g.CheckPath(filepath.Join(home, p), false); !d.Allowed {
					t.Errorf("reading %s refused (%s), want it readable", p, d.Reason)
				}
			}
			// A missing entry has nothing to hide.
			if slices.Contains(masks, filepath.Join(home, ".gnupg")) {
				t.Errorf("masks %v hold the missing .gnupg", masks)
			}
			if !strings.Contains(g.String(), "deny "+filepath.Join(home, ".ssh")+"\n") {
				t.Errorf("the grant's description does not list .ssh as denied:\n%s", g)
			}
		})
	}
}

// TestProjectCredentialNamesNotHidden checks that a directory that does
// not look like a home directory keeps files of the credential table's
// names: a project's .npmrc or .docker/config.json is the project's.
func TestProjectCredentialNamesNotHidden(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	dir := fixture(t, ".npmrc", ".docker/config.json", ".aws/config", ".kube/config", "main.go")
	for _, f := range []Flags{{}, {ReadOnly: []string{dir}}} {
		g, err := FromFlags(dir, f)
		if err != nil {
			t.Fatal(err)
		}
		if m := g.Masks(); len(m) > 0 {
			t.Errorf("%+v: masks %v in a project directory, want none", f, m)
		}
		if d := g.CheckPath(filepath.Join(dir, ".npmrc"), false); !d.Allowed {
			t.Errorf("%+v: reading the project's .npmrc refused: %s", f, d.Reason)
		}
	}
}

// TestHomeCredentialsGrantedByName checks that a credential store the grant
// names (itself, or a path inside it) is not hidden, while the others are.
func TestHomeCredentialsGrantedByName(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	home := fixture(t, ".bashrc", ".profile", ".ssh/id_rsa", ".ssh/known_hosts", ".aws/credentials", ".netrc")
	for _, extra := range []string{".ssh", ".ssh/known_hosts"} {
		g, err := FromFlags(home, Flags{ReadOnly: []string{home, filepath.Join(home, extra)}})
		if err != nil {
			t.Fatalf("granting %s: %v", extra, err)
		}
		if d := g.CheckPath(filepath.Join(home, extra), false); !d.Allowed {
			t.Errorf("granting %s by name: reading it refused: %s", extra, d.Reason)
		}
		if slices.Contains(g.Masks(), filepath.Join(home, ".ssh")) {
			t.Errorf("granting %s by name: .ssh still masked: %v", extra, g.Masks())
		}
		for _, p := range []string{".aws/credentials", ".netrc"} {
			if d := g.CheckPath(filepath.Join(home, p), false); d.Allowed {
				t.Errorf("granting %s by name: %s readable too", extra, p)
			}
		}
	}
	g, err := FromFlags(home, Flags{ReadOnly: []string{filepath.Join(home, ".netrc")}, ReadWrite: []string{home}})
	if err != nil {
		t.Fatal(err)
	}
	if d := g.CheckPath(filepath.Join(home, ".netrc"), false); !d.Allowed {
		t.Errorf("a .netrc granted by name refused: %s", d.Reason)
	}
}

// TestRescanHidesNewHomeCredentials checks that a credential store made in
// a granted home directory after the grant was built (gh auth login while
// airlock serve runs) is hidden from the sessions opened after it.
func TestRescanHidesNewHomeCredentials(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	home := fixture(t, ".bashrc", ".profile", ".ssh/id_rsa")
	g, err := FromFlags(home, Flags{ReadOnly: []string{home}})
	if err != nil {
		t.Fatal(err)
	}
	hosts := filepath.Join(home, ".config", "gh", "hosts.yml")
	if err := os.MkdirAll(filepath.Dir(hosts), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hosts, []byte(fileContent), 0o600); err != nil {
		t.Fatal(err)
	}
	r := g.Rescan()
	if d := r.CheckPath(hosts, false); d.Allowed {
		t.Errorf("after Rescan, a new %s is readable", hosts)
	}
	if !slices.Contains(r.Masks(), filepath.Dir(hosts)) {
		t.Errorf("after Rescan, masks %v lack %s", r.Masks(), filepath.Dir(hosts))
	}
	if d := g.CheckPath(filepath.Join(home, ".ssh", "id_rsa"), false); d.Allowed {
		t.Errorf(".ssh readable before Rescan")
	}
}
