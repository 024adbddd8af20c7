package grant

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestTempDirHidden: $TMPDIR is the host's temporary directory, where
// programs make Unix sockets at any time: never granted itself, hidden in
// a tree that holds it (a home directory's ~/tmp included, which the
// home's split would otherwise grant read-write), left alone when the
// grant names a directory inside it.
func TestTempDirHidden(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	dir := fixture(t, "w/tmp/x/", "w/f", "h/.bashrc", "h/.profile", "h/tmp/", "h/src/")
	check := func(t *testing.T, g *Grant, tmp string, hidden bool) {
		t.Helper()
		d := g.CheckPath(filepath.Join(tmp, "agent.sock"), false)
		if hidden && (d.Allowed || d.Rule != tempDirRule || !strings.Contains(d.Reason, "$TMPDIR")) {
			t.Errorf("reading in $TMPDIR: %+v, want it refused as the host's temporary directory", d)
		}
		if hidden != slices.Contains(g.Masks(), tmp) {
			t.Errorf("masks %v: hidden %v, want %v", g.Masks(), !hidden, hidden)
		}
		for _, m := range g.Mounts() {
			if m.Source == tmp {
				t.Errorf("$TMPDIR %s is granted (%+v)", tmp, m)
			}
		}
	}

	t.Setenv("TMPDIR", filepath.Join(dir, "w/tmp")+"/")
	g, err := FromFlags(filepath.Join(dir, "w"), Flags{})
	if err != nil {
		t.Fatal(err)
	}
	check(t, g, filepath.Join(dir, "w/tmp"), true)
	if d := g.CheckPath(filepath.Join(dir, "w/f"), true); !d.Allowed {
		t.Errorf("writing w/f: %s", d.Reason)
	}
	if _, err := FromFlags(dir, Flags{ReadOnly: []string{"w/tmp"}}); err == nil || !strings.Contains(err.Error(), "$TMPDIR") {
		t.Errorf("granting $TMPDIR: %v, want a refusal", err)
	}
	g, err = FromFlags(dir, Flags{ReadWrite: []string{"w", "w/tmp/x"}})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(g.Masks(), filepath.Join(dir, "w/tmp")) {
		t.Errorf("masks %v hold $TMPDIR, which holds a granted directory", g.Masks())
	}

	// A home directory's ~/tmp that is $TMPDIR.
	t.Setenv("TMPDIR", filepath.Join(dir, "h/tmp"))
	g, err = FromFlags(filepath.Join(dir, "h"), Flags{})
	if err != nil {
		t.Fatal(err)
	}
	check(t, g, filepath.Join(dir, "h/tmp"), true)
	if d := g.CheckPath(filepath.Join(dir, "h/src/x"), true); !d.Allowed {
		t.Errorf("writing h/src/x: %s", d.Reason)
	}
}
