//go:build !linux

package grant

import (
	"os"
	"path/filepath"
)

// scanForceLstat is the Linux scan's switch for its tests (every entry
// typed by lstat); the walk here has no entry types to ignore.
var scanForceLstat bool

// scanNested is walkNested where no faster scan is written.
func scanNested(r string, rootIsGit bool, others []string, found nestedFound) bool {
	return walkNested(r, rootIsGit, others, found)
}

// gitRepository reports whether p is a repository's .git directory: a
// directory with a HEAD that is not empty (airlock makes placeholders on
// Linux only).
func gitRepository(p string) bool {
	fi, err := os.Lstat(p)
	if err != nil || !fi.IsDir() {
		return false
	}
	head, err := os.Lstat(filepath.Join(p, "HEAD"))
	return err == nil && (head.Size() > 0 || head.Mode()&os.ModeSymlink != 0)
}

// isPlaceholder reports whether p is one of airlock's placeholders, which
// are made on Linux only.
func isPlaceholder(p string) bool { return false }

// protectInside is the Linux scan's protection of what symlinks and hard
// links in protected directories lead to; not written for the portable
// walk.
func protectInside(r string, others []string, out []protectedPath, linked []string, add func(p, rule string, dir bool)) bool {
	return true
}

// linkCount is not known here: the portable walk reports no links.
func linkCount(fi os.FileInfo) (uint64, bool) { return 0, false }
