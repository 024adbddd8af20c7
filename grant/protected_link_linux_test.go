package grant

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestLinkIntoProtectedDirectory: a plain name in the tree that is a hard
// link to a file inside a nested protected directory is protected, the
// session records it, and the next session keeps it while it is still a
// link, whatever its scan reaches.
func TestLinkIntoProtectedDirectory(t *testing.T) {
	w, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(w, "sub", ".vscode"), 0o755); err != nil {
		t.Fatal(err)
	}
	tasks := filepath.Join(w, "sub", ".vscode", "tasks.json")
	if err := os.WriteFile(tasks, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A file with two names outside the protected paths is left alone.
	if err := os.WriteFile(filepath.Join(w, "a"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(w, "a"), filepath.Join(w, "b")); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(w, "innocent")
	if err := os.Link(tasks, link); err != nil {
		t.Fatal(err)
	}
	g, err := FromFlags(w, Flags{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(g.Protected(), link) {
		t.Fatalf("%s, a link to %s, is not protected: %v", link, tasks, g.Protected())
	}
	for _, p := range []string{"a", "b"} {
		if slices.Contains(g.Protected(), filepath.Join(w, p)) {
			t.Errorf("%s, linked only to a plain file, is protected", p)
		}
	}
	if d := g.CheckPath(link, true); d.Allowed {
		t.Errorf("writing %s allowed", link)
	} else {
		t.Logf("refused: %s", d.Reason)
	}
	rec := g.NestedProtected(w)
	// The next session does not see the protected directory (past its
	// bound, say): the record still holds the link.
	if err := os.RemoveAll(filepath.Join(w, "sub")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w, "other"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(w, "other"), filepath.Join(w, "other2")); err != nil {
		t.Fatal(err)
	}
	g2, err := FromFlags(w, Flags{})
	if err != nil {
		t.Fatal(err)
	}
	// innocent has one name now: no longer kept.
	if slices.Contains(g2.Remember(rec).Protected(), link) {
		t.Errorf("%s kept with one name left", link)
	}
	if err := os.Link(link, filepath.Join(w, "again")); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(g2.Remember(rec).Protected(), link) {
		t.Errorf("%s, recorded and still a link, not kept", link)
	}
}

// TestSymlinkIntoTreeFromProtectedDirectory: the target of a symlink inside
// a protected directory, where it lies in the tree, is protected under
// the directory's rule, a directory whole; one outside the tree is not.
func TestSymlinkIntoTreeFromProtectedDirectory(t *testing.T) {
	w, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"sub/.git/objects/ab", "sub/.git/refs", "sub/myhooks", "scripts"} {
		if err := os.MkdirAll(filepath.Join(w, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for p, c := range map[string]string{"sub/.git/HEAD": "ref: refs/heads/main\n", "sub/cfg": "", "scripts/x": "", "scripts/obj": ""} {
		if err := os.WriteFile(filepath.Join(w, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for link, to := range map[string]string{"sub/.git/config": "../cfg", "sub/.git/hooks": "../myhooks", "sub/.git/out": "/etc/passwd", "sub/.git/objects/ab/x": "../../../../scripts/obj"} {
		if err := os.Symlink(to, filepath.Join(w, link)); err != nil {
			t.Fatal(err)
		}
	}
	g, err := FromFlags(w, Flags{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"sub/cfg", "sub/myhooks"} {
		if !slices.Contains(g.Protected(), filepath.Join(w, p)) {
			t.Errorf("%s, where a symlink in the nested .git leads, is not protected: %v", p, g.Protected())
		}
	}
	if !slices.Contains(g.ProtectedDirs(), filepath.Join(w, "sub/myhooks")) {
		t.Errorf("sub/myhooks is not protected as a directory: %v", g.ProtectedDirs())
	}
	// Objects are data: what a link among them leads to stays writable.
	if slices.Contains(g.Protected(), filepath.Join(w, "scripts/obj")) {
		t.Errorf("scripts/obj, linked from the object store, is protected")
	}
}
