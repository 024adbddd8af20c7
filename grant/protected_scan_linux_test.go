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

// TestPlaceholderGitHeldWhole: a .git directory that carries the
// placeholder mark (another call's placeholder, or one a killed broker
// left) is no repository: the whole name is held, as for a missing .git,
// not only a repository's hooks and config.
func TestPlaceholderGitHeldWhole(t *testing.T) {
	for _, marked := range []bool{false, true} {
		dir := t.TempDir()
		git := filepath.Join(dir, ".git")
		if err := os.Mkdir(git, 0o755); err != nil {
			t.Fatal(err)
		}
		if marked {
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
		if whole != marked || hooks == marked {
			t.Errorf("marked %v: .git held whole %v, .git/hooks held %v; want whole only when marked", marked, whole, hooks)
		}
	}
}
