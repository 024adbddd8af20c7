package linux_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/grant"
)

// TestHardLinkIntoProtectedDirectory: a shell may make a nested protected
// directory during a session (sub/.vscode, sub/.git), and the next session
// holds it read-only whole. A hard link the first session made from a
// plain name in the tree to a file inside it must not leave that file
// writable from the next session: writing the plain name writes the
// protected file, which host tools (VS Code's tasks, host git's config)
// then act on.
func TestHardLinkIntoProtectedDirectory(t *testing.T) {
	for _, c := range []struct{ name, dir, file string }{
		{"vscode tasks", "sub/.vscode", "tasks.json"},
		{"nested repository config", "sub/.git", "config"},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			session := func(script string) (string, error) {
				t.Helper()
				g, err := grant.FromFlags(w, grant.Flags{})
				if err != nil {
					t.Fatal(err)
				}
				return runInGrant(t, g, w, script)
			}
			// The first session makes the protected directory and a second
			// name for the file in it.
			out, err := session("set -e; mkdir -p " + c.dir + " && printf 'ref: refs/heads/main\\n' >" + c.dir + "/HEAD && mkdir " + c.dir + "/objects " + c.dir + "/refs && printf 'safe\\n' >" + c.dir + "/" + c.file + " && ln " + c.dir + "/" + c.file + " innocent && echo made")
			if err != nil || !strings.Contains(out, "made") {
				t.Fatalf("first session: %v\n%s", err, out)
			}
			// The next session finds the directory and holds it read-only;
			// the other name must not write through to it.
			out, err = session("printf 'evil\\n' >innocent; echo wrote $?")
			t.Logf("next session: err %v, output %q", err, out)
			got, rerr := os.ReadFile(filepath.Join(w, c.dir, c.file))
			if rerr != nil {
				t.Fatal(rerr)
			}
			if string(got) != "safe\n" {
				t.Errorf("%s/%s is now %q, written through its hard link innocent by the next session (err %v, output %q)", c.dir, c.file, got, err, out)
			}
		})
	}
}
