package grant

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fileContent is what every fixture file holds; no refusal may echo it.
const fileContent = "c0ntent-7f3a9b"

// fixture builds a directory tree for path tests and returns its resolved
// root. Entries are "dir/", "file", or "link -> target".
func fixture(t testing.TB, entries ...string) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name, target, isLink := strings.Cut(e, " -> ")
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		switch {
		case isLink:
			target = strings.ReplaceAll(target, "$T", dir)
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
		case strings.HasSuffix(name, "/"):
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
		default:
			if err := os.WriteFile(p, []byte(fileContent), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

// mustParse parses a grant whose text may use $T for dir.
func mustParse(t *testing.T, dir, text string) *Grant {
	t.Helper()
	g, err := Parse([]byte(strings.ReplaceAll(text, "$T", dir)), "grant.toml", dir)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return g
}
