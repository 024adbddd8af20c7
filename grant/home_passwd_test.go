package grant

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestPasswdHomesCredentialsHidden: a home directory the user database
// names (a service account's: /var/lib/postgresql, /srv/git) has its
// credential stores hidden when a grant reaches it at any depth, as one
// directly in a granted directory has, whether or not it looks like a home
// directory: a root broker's grant of /var read-only showed the sandbox
// /var/lib/postgresql/.pgpass and /srv/git/.ssh/id_ed25519 two levels
// down, where only the granted directory's own entries were looked at
// (red team).
func TestPasswdHomesCredentialsHidden(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	dir := fixture(t, "var/lib/postgresql/.pgpass", "var/lib/postgresql/15/main/PG_VERSION",
		"srv/git/.ssh/id_ed25519", "srv/git/repos/a.git/HEAD", "srv/www/.netrc")
	passwd := filepath.Join(t.TempDir(), "passwd")
	if err := os.WriteFile(passwd, []byte("root:x:0:0:root:/root:/bin/bash\n"+
		"sync:x:4:65534:sync:/bin:/bin/sync\n"+
		"systemd-network:x:998:998::/:/usr/sbin/nologin\n"+
		"# a comment\n\n"+
		"postgres:x:101:104:PostgreSQL administrator,,,:"+dir+"/var/lib/postgresql:/bin/bash\n"+
		"git:x:102:105::"+dir+"/srv/git/:/usr/bin/git-shell\n"+
		"broken:x:103\n"+
		"rel:x:104:106::srv/www:/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := passwdFile
	passwdFile = passwd
	t.Cleanup(func() { passwdFile = old })
	for _, flags := range []Flags{{ReadOnly: []string{dir}}, {ReadWrite: []string{dir}}, {ReadOnly: []string{filepath.Join(dir, "var")}}} {
		g, err := FromFlags(dir, flags)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"var/lib/postgresql/.pgpass", "srv/git/.ssh", "srv/git/.ssh/id_ed25519"} {
			p = filepath.Join(dir, p)
			if _, ok := g.rootOf(p); !ok {
				continue
			}
			if d := g.CheckPath(p, false); d.Allowed || d.Rule != credentialRule {
				t.Errorf("%v: reading %s: %+v, want it hidden as a home directory's credentials", flags, p, d)
			}
		}
		masks := g.Masks()
		if !slices.Contains(masks, filepath.Join(dir, "var/lib/postgresql/.pgpass")) {
			t.Errorf("%v: masks %v lack .pgpass", flags, masks)
		}
		for _, p := range []string{"var/lib/postgresql/15/main/PG_VERSION", "srv/git/repos/a.git/HEAD", "srv/www/.netrc"} {
			if _, ok := g.rootOf(filepath.Join(dir, p)); !ok {
				continue
			}
			if d := g.CheckPath(filepath.Join(dir, p), false); !d.Allowed {
				t.Errorf("%v: reading %s refused (%s), want it readable", flags, p, d.Reason)
			}
		}
	}
}

// TestPasswdHomeSplit: a home directory the user database names is split
// as a person's is when a read-write grant holds it or is it (a read-only
// top, its directories read-write), whether or not it looks like one: a
// root broker's grant of /srv read-write let a sandbox add a key to
// /srv/git/.ssh/authorized_keys, the git account's (red team).
func TestPasswdHomeSplit(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	dir := fixture(t, "srv/git/repos/a.git/HEAD", "srv/www/index.html")
	passwd := filepath.Join(t.TempDir(), "passwd")
	if err := os.WriteFile(passwd, []byte("git:x:102:105::"+dir+"/srv/git:/usr/bin/git-shell\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := passwdFile
	passwdFile = passwd
	t.Cleanup(func() { passwdFile = old })
	for _, rw := range []string{"srv", "srv/git"} {
		g, err := FromFlags(dir, Flags{ReadWrite: []string{rw}})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"srv/git/.ssh/authorized_keys", "srv/git/.ssh/rc", "srv/git/.profile", "srv/git/new"} {
			if d := g.CheckPath(filepath.Join(dir, p), true); d.Allowed {
				t.Errorf("rw %s: writing %s allowed, want the home directory's top read-only", rw, p)
			}
		}
		for _, p := range []string{"srv/git/repos/a.git/objects/x", "srv/www/index.html"} {
			if _, ok := g.rootOf(filepath.Join(dir, p)); !ok {
				continue
			}
			if d := g.CheckPath(filepath.Join(dir, p), true); !d.Allowed {
				t.Errorf("rw %s: writing %s: %s", rw, p, d.Reason)
			}
		}
	}
}
