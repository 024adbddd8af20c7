package grant

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/testenv"
)

// TestFoldingTreeRefused: a granted directory whose file system answers a
// name spelt in another case with the same file is refused, for its masks
// and protected paths would cover one spelling only. This kernel has no
// case-folding file system to mount (no FUSE view of a macOS volume, no
// SMB share), so a file system that is not one of the known exact ones
// (ramfs) stands for one, with .ENV a hard link to .env: the same file
// under both spellings, which is what a folding file system shows.
func TestFoldingTreeRefused(t *testing.T) {
	dir := testenv.MountFS(t, "ramfs")
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
	if err == nil || !strings.Contains(err.Error(), "fold case") || !strings.Contains(err.Error(), dir+"/.ENV") || !strings.Contains(err.Error(), dir+"/.env") {
		t.Fatalf("a folding tree, read-write: got %v, want it refused for folding case", err)
	}
	// Read-only, it is refused only where it holds a denied path.
	other := t.TempDir()
	if _, err := FromFlags(other, Flags{ReadOnly: []string{dir}}); err != nil {
		t.Fatalf("a folding tree read-only with nothing denied in it was refused: %v", err)
	}
	_, err = FromFlags(other, Flags{ReadOnly: []string{dir}, Deny: []string{filepath.Join(dir, ".env")}})
	if err == nil || !strings.Contains(err.Error(), "fold case") {
		t.Fatalf("a folding tree read-only with a denied path: got %v, want it refused", err)
	}
}

// TestFoldingProbes: dirFolds on the file systems it takes as they are
// (tmpfs: the same hard-linked pair is not even looked at), and on one it
// probes: an empty directory and one whose names have no ASCII letter are
// told by a probe file of its own (removed after), which must be made or
// the directory is taken as folding; a name whose letters are not ASCII
// (the Kelvin sign, which Go folds to k and SMB does not) tells nothing.
func TestFoldingProbes(t *testing.T) {
	tmp := testenv.MountFS(t, "tmpfs")
	if err := os.WriteFile(filepath.Join(tmp, "a"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(tmp, "a"), filepath.Join(tmp, "A")); err != nil {
		t.Fatal(err)
	}
	if folds, _ := dirFolds(tmp); folds {
		t.Error("tmpfs was probed and taken for folding")
	}
	ram := testenv.MountFS(t, "ramfs")
	if folds, why := dirFolds(ram); folds {
		t.Errorf("an empty ramfs was taken for folding: %s", why)
	}
	for _, n := range []string{"1", "2", "\u212a"} {
		if err := os.WriteFile(filepath.Join(ram, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if folds, why := dirFolds(ram); folds {
		t.Errorf("names without ASCII letters were taken for folding: %s", why)
	}
	if ents, _ := os.ReadDir(ram); len(ents) != 3 {
		t.Errorf("the probe was left behind: %v", ents)
	}
	if err := os.Link(filepath.Join(ram, "1"), filepath.Join(ram, "x")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(ram, "1"), filepath.Join(ram, "X")); err != nil {
		t.Fatal(err)
	}
	if folds, why := dirFolds(ram); !folds || why == "" {
		t.Errorf("x and X one file on ramfs: dirFolds = %v %q, want folding", folds, why)
	}
	// Where nothing tells and no probe can be made, refused.
	ro := testenv.MountFS(t, "ramfs")
	if err := os.WriteFile(filepath.Join(ro, "7"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("", ro, "", unix.MS_REMOUNT|unix.MS_RDONLY, ""); err != nil {
		t.Fatal(err)
	}
	if folds, why := dirFolds(ro); !folds || !strings.Contains(why, "no probe") {
		t.Errorf("a read-only directory nothing tells of: dirFolds = %v %q, want folding", folds, why)
	}
	if got := swapCase(".Git/hooks-1\u212a"); got != ".gIT/HOOKS-1\u212a" {
		t.Errorf("swapCase = %q", got)
	}
}

// TestFoldingMountBelowRefused: a bind mount of a granted tree takes the
// mounts below it too, so a folding file system mounted inside a tree on
// tmpfs is refused as if it were the tree's own.
func TestFoldingMountBelowRefused(t *testing.T) {
	root := testenv.MountFS(t, "tmpfs")
	share := filepath.Join(root, "share")
	if err := os.Mkdir(share, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("ramfs", share, "ramfs", 0, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(share, unix.MNT_DETACH) })
	if _, err := FromFlags(root, Flags{}); err != nil {
		t.Fatalf("a case-sensitive mount below was refused: %v", err)
	}
	if err := os.WriteFile(filepath.Join(share, ".env"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(share, ".env"), filepath.Join(share, ".ENV")); err != nil {
		t.Fatal(err)
	}
	if _, err := FromFlags(root, Flags{}); err == nil || !strings.Contains(err.Error(), "fold case") {
		t.Errorf("read-write over a folding mount: got %v, want it refused", err)
	}
	_, err := FromFlags(t.TempDir(), Flags{ReadOnly: []string{root}, Deny: []string{filepath.Join(share, ".env")}})
	if err == nil || !strings.Contains(err.Error(), "fold case") {
		t.Errorf("read-only with a denied path in a folding mount: got %v, want it refused", err)
	}
}
