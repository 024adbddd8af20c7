package linux

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/airlockhq/airlock/internal/testenv"
)

// TestListNamesOnlyWhereNamesAreExact: samePaths takes a name missing from
// a directory's listing for a missing path, which holds only where the
// listing names what a lookup finds. On a file system not known to (here
// ramfs, standing for the case-insensitive ones: vfat, SMB, FUSE views) a
// lookup of ".env" may find a file listed as ".ENV", so listNames refuses
// to list and every path is looked up instead; on ext4, xfs, btrfs, f2fs
// or tmpfs without casefold it lists.
func TestListNamesOnlyWhereNamesAreExact(t *testing.T) {
	for _, fs := range []struct {
		typ    string
		listed bool
	}{{"tmpfs", true}, {"ramfs", false}} {
		t.Run(fs.typ, func(t *testing.T) {
			dir := testenv.MountFS(t, fs.typ)
			if err := os.WriteFile(filepath.Join(dir, ".ENV"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			names := listNames(dir)
			if got := names != nil; got != fs.listed {
				t.Fatalf("listNames on %s: listed %v, want %v (%v)", fs.typ, got, fs.listed, names)
			}
			if fs.listed && !names[".ENV"] {
				t.Errorf("listing of %s lacks .ENV: %v", fs.typ, names)
			}
		})
	}
	// A kernel file system is not listed either.
	if names := listNames("/proc/self"); names != nil {
		t.Errorf("listNames(/proc/self) listed %d names, want none", len(names))
	}
}
