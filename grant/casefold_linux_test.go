package grant

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// mountAt mounts a file system of type typ on a new directory and returns
// it, or skips the test where that cannot be done (not root).
func mountAt(t *testing.T, typ string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a file system needs root")
	}
	dir := t.TempDir()
	if err := unix.Mount(typ, dir, typ, 0, ""); err != nil {
		t.Skipf("mounting %s: %v", typ, err)
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	return dir
}

// TestFoldingTreeRefused: a granted directory whose file system answers a
// name spelt in another case with the same file is refused, for its masks
// and protected paths would cover one spelling only. This kernel has no
// case-folding file system to mount (no FUSE view of a macOS volume, no
// SMB share), so a file system that is not one of the known exact ones
// (ramfs) stands for one, with .ENV a hard link to .env: the same file
// under both spellings, which is what a folding file system shows.
func TestFoldingTreeRefused(t *testing.T) {
	dir := mountAt(t, "ramfs")
	if err := os.WriteFile(filepath.Join(dir, ".env"), []byte("S=1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := FromFlags(dir, Flags{}); err != nil {
		t.Fatalf("a case-sensitive tree was refused: %v", err)
	}
	if err := os.Link(filepath.Join(dir, ".env"), filepath.Join(dir, ".ENV")); err != nil {
		t.Fatal(err)
	}
	_, err := FromFlags(dir, Flags{})
	if err == nil || !strings.Contains(err.Error(), "folds case") || !strings.Contains(err.Error(), dir+"/.ENV") || !strings.Contains(err.Error(), dir+"/.env") {
		t.Fatalf("a folding tree, read-write: got %v, want it refused for folding case", err)
	}
	// Read-only, it is refused only where it holds a denied path.
	other := t.TempDir()
	if _, err := FromFlags(other, Flags{ReadOnly: []string{dir}}); err != nil {
		t.Fatalf("a folding tree read-only with nothing denied in it was refused: %v", err)
	}
	_, err = FromFlags(other, Flags{ReadOnly: []string{dir}, Deny: []string{filepath.Join(dir, ".env")}})
	if err == nil || !strings.Contains(err.Error(), "folds case") {
		t.Fatalf("a folding tree read-only with a denied path: got %v, want it refused", err)
	}
}

// TestFoldingProbes: caseFolds on the file systems it takes as they are
// (tmpfs: the same hard-linked pair is not even looked at), on an empty
// directory of another file system (nothing to tell by: not refused), and
// on names with no letters.
func TestFoldingProbes(t *testing.T) {
	tmp := mountAt(t, "tmpfs")
	if err := os.WriteFile(filepath.Join(tmp, "a"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(tmp, "a"), filepath.Join(tmp, "A")); err != nil {
		t.Fatal(err)
	}
	if folds, _ := caseFolds(tmp); folds {
		t.Error("tmpfs was probed and taken for folding")
	}
	ram := mountAt(t, "ramfs")
	if folds, _ := caseFolds(ram); folds {
		t.Error("an empty ramfs was taken for folding")
	}
	for _, n := range []string{"1", "2"} {
		if err := os.WriteFile(filepath.Join(ram, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if folds, _ := caseFolds(ram); folds {
		t.Error("names without letters were taken for folding")
	}
	if err := os.Link(filepath.Join(ram, "1"), filepath.Join(ram, "x")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(ram, "1"), filepath.Join(ram, "X")); err != nil {
		t.Fatal(err)
	}
	if folds, ev := caseFolds(ram); !folds || ev == "" {
		t.Errorf("x and X one file on ramfs: caseFolds = %v %q, want folding", folds, ev)
	}
	if got := swapCase(".Git/hooks-1"); got != ".gIT/HOOKS-1" {
		t.Errorf("swapCase = %q", got)
	}
}
