package grant

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// TestScanNestedBeyondPathMax: a nested protected name deeper than
// PATH_MAX, which a shell can make one relative mkdir at a time, is found,
// and the scan is complete; once ENAMETOOLONG skipped it and called the
// scan complete.
func TestScanNestedBeyondPathMax(t *testing.T) {
	r, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	comp := strings.Repeat("d", 250)
	fd, err := syscall.Open(r, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range append(slices.Repeat([]string{comp}, 17), "repo", ".vscode") {
		if err := syscall.Mkdirat(fd, c, 0o755); err != nil {
			t.Fatal(err)
		}
		next, err := syscall.Openat(fd, c, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
		syscall.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		fd = next
	}
	syscall.Close(fd)
	want := r + strings.Repeat("/"+comp, 17) + "/repo/.vscode .vscode dir=true"
	got := runScan(scanNested, r, false, []string{r})
	if !got.Complete || len(got.Found) != 1 || got.Found[0] != want {
		t.Errorf("scan of a tree deeper than PATH_MAX: complete %v, found %d names (%.80q...); want complete, the nested .vscode", got.Complete, len(got.Found), got.Found)
	}
}

// TestPlaceholderGitHeldWhole: only a repository has its parts protected:
// a .git directory with a HEAD that carries no placeholder mark. A .git
// with no HEAD (an airlock placeholder where the file system keeps no
// marks, a placeholder another call holds) or with the mark (one a killed
// broker left) is held whole, as a missing .git is.
func TestPlaceholderGitHeldWhole(t *testing.T) {
	tests := []struct {
		name       string
		head, mark bool
		repository bool
	}{
		{"a repository", true, false, true},
		{"an empty .git", false, false, false},
		{"a marked placeholder", false, true, false},
		{"a marked .git with a HEAD", true, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			git := filepath.Join(dir, ".git")
			if err := os.Mkdir(git, 0o755); err != nil {
				t.Fatal(err)
			}
			if tt.head {
				if err := os.WriteFile(filepath.Join(git, "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tt.mark {
				if err := syscall.Setxattr(git, PlaceholderXattr, []byte("1"), 0); err != nil {
					t.Skipf("no user extended attributes here: %v", err)
				}
			}
			g, err := FromFlags(dir, Flags{})
			if err != nil {
				t.Fatal(err)
			}
			whole := slices.Contains(g.ProtectedDirs(), git)
			hooks := slices.Contains(g.ProtectedDirs(), filepath.Join(git, "hooks"))
			if whole == tt.repository || hooks != tt.repository {
				t.Errorf(".git held whole %v, .git/hooks held %v; want a repository's parts only: %v", whole, hooks, tt.repository)
			}
		})
	}
}

// TestAnywhereNamesStart keeps isProtectedName's shortcut true: every
// "anywhere" name starts with a dot or an underscore.
func TestAnywhereNamesStart(t *testing.T) {
	for _, e := range protectedTable {
		if e.Where == "anywhere" && !isProtectedName([]byte(e.Name)) {
			t.Errorf("%q is an anywhere name that isProtectedName does not know", e.Name)
		}
	}
}
