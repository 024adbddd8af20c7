package linux_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/grant"
)

// TestPlaceholderOfALongName: a protected path that does not exist yet and
// whose name is near the longest a file system takes (NAME_MAX) is held
// like any other. Its placeholder is made under a temporary name longer
// than its own (createPlaceholder), which the kernel refused
// (ENAMETOOLONG), and the hold failed: every call of every later session
// over the tree was refused. A sandbox chooses such a name: a nested
// repository it makes names its hooks directory, which the next session
// holds while it is missing.
func TestPlaceholderOfALongName(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w := filepath.Join(base, "w")
	if err := os.Mkdir(w, 0o755); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("h", 250)
	run := func(script string) (string, error) {
		g, err := grant.FromFlags(w, grant.Flags{})
		if err != nil {
			t.Fatal(err)
		}
		return runInGrant(t, g, w, script)
	}
	out, err := run(`mkdir -p sub/.git/objects sub/.git/refs && printf 'ref: refs/heads/main\n' > sub/.git/HEAD &&
printf '[core]\n\thooksPath = ` + long + `\n' > sub/.git/config && echo planted`)
	if err != nil || !strings.Contains(out, "planted") {
		t.Fatalf("the first session's script: %v\n%s", err, out)
	}
	g, err := grant.FromFlags(w, grant.Flags{})
	if err != nil {
		t.Fatal(err)
	}
	held := filepath.Join(w, "sub", long)
	found := false
	for _, p := range append(g.Protected(), g.Masks()...) {
		found = found || p == held
	}
	if !found {
		t.Skipf("the grant does not hold %s: nothing to show here", held)
	}
	for range 2 {
		out, err = runInGrant(t, g, w, `mkdir sub/`+long+` 2>&1; echo ran`)
		if err != nil {
			t.Fatalf("a later session's call was refused: %v", err)
		}
		if !strings.Contains(out, "ran") {
			t.Fatalf("the call did not run:\n%s", out)
		}
		if _, err := os.Lstat(filepath.Join(held, "x")); err == nil {
			t.Fatal("the sandbox made the hooks directory")
		}
	}
	if _, err := os.Lstat(held); err == nil {
		t.Errorf("the placeholder %s was left in the tree", held)
	}
	ents, _ := os.ReadDir(filepath.Join(w, "sub"))
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".airlock") {
			t.Errorf("%s left in the tree", e.Name())
		}
	}
}
