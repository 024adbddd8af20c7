package grant

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode"
)

// maxFoldProbes is the most entries of a directory caseFolds tries.
const maxFoldProbes = 64

// caseFolds reports whether the file system holding directory dir may
// answer a name spelt in another case with the file of that name, and
// says which name did. airlock's masks and protected paths are mounts over
// one name each, found by the kernel's directory cache; where a file
// system folds case but that cache does not (FUSE views such as virtiofs
// of a macOS volume, SMB without its nocase option) a sandbox reaches the
// same file as .ENV, .GIT/HOOKS or .BashRC, past every mask. ext4, xfs,
// btrfs, f2fs and tmpfs are taken as they are: either exact,
// or folding case in the cache too (casefold), where a mount covers every
// spelling. Elsewhere entries of dir with letters are looked up spelt
// with their case swapped: the same file under both spellings is folding;
// a missing one is not. An empty directory is told by its own name in its
// parent, when both are on one file system.
func caseFolds(dir string) (bool, string) {
	if masksCoverAllSpellings(dir) {
		return false, ""
	}
	f, err := os.Open(dir)
	if err != nil {
		return false, ""
	}
	names, _ := f.Readdirnames(maxFoldProbes)
	f.Close()
	for _, n := range names {
		if folds, decided := sameUnderSwap(dir, n); decided {
			return folds, foldEvidence(dir, n, folds)
		}
	}
	parent, base := filepath.Split(dir)
	if fi, err := os.Lstat(parent); err == nil && len(names) == 0 {
		if di, err := os.Lstat(dir); err == nil && sameDevice(fi, di) {
			if folds, decided := sameUnderSwap(parent, base); decided {
				return folds, foldEvidence(parent, base, folds)
			}
		}
	}
	return false, ""
}

// sameUnderSwap looks name up in dir as it is and with its case swapped:
// decided when the swapped spelling is missing (not folding) or the same
// file (folding); a name with no letters, or two different files, tell
// nothing.
func sameUnderSwap(dir, name string) (folds, decided bool) {
	sw := swapCase(name)
	if sw == name {
		return false, false
	}
	a, err := os.Lstat(filepath.Join(dir, name))
	if err != nil {
		return false, false
	}
	b, err := os.Lstat(filepath.Join(dir, sw))
	if errors.Is(err, fs.ErrNotExist) {
		return false, true
	}
	if err != nil || !os.SameFile(a, b) {
		return false, false
	}
	return true, true
}

func foldEvidence(dir, name string, folds bool) string {
	if !folds {
		return ""
	}
	return filepath.Join(dir, swapCase(name)) + " is " + filepath.Join(dir, name)
}

// swapCase is s with the case of each letter swapped.
func swapCase(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case unicode.IsUpper(r):
			return unicode.ToLower(r)
		case unicode.IsLower(r):
			return unicode.ToUpper(r)
		}
		return r
	}, s)
}
