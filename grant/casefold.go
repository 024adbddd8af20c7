package grant

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// maxFoldProbes is the most entries of a directory dirFolds tries.
const maxFoldProbes = 64

// FoldingError returns an error naming dir when a sandbox could reach a
// masked or protected name below it by another spelling (treeFolds), nil
// when it could not. The hands (airlock tool-server) check each of their
// roots a broker's call masks paths in.
func FoldingError(dir string) error {
	if folds, why := treeFolds(dir); folds {
		return fmt.Errorf("%s is on a file system that may fold case (%s) where a mount over a name does not cover its other spellings: a sandbox could reach a protected or denied path as .GIT/hooks or .ENV; grant a directory on a case-sensitive file system (ext4, xfs, btrfs, tmpfs, or a container volume)", dir, why)
	}
	return nil
}

// dirFoldsByProbe tells whether the directory dir, on a file system not
// known to be exact, folds case. airlock's masks and protected paths are
// mounts over one name each, found by the kernel's directory cache; where
// a file system folds case but that cache does not (FUSE views such as
// virtiofs of a macOS volume, SMB), a sandbox reaches the same file as
// .ENV, .GIT/HOOKS or .BashRC, past every mask. Entries of dir are looked
// up with the case of their ASCII letters swapped (every folding file
// system folds ASCII; other letters fold by tables that differ from Go's):
// the same file under both spellings is folding, a missing one is not.
// When no entry tells (none has an ASCII letter, or both spellings are
// different files), a probe file of its own is made and looked up so; when
// that cannot be made either, the directory is taken as folding: a tree
// this cannot be told of is refused, not trusted.
func dirFoldsByProbe(dir string) (bool, string) {
	f, err := os.Open(dir)
	if err != nil {
		return true, fmt.Sprintf("%s cannot be listed to tell: %v", dir, err)
	}
	names, _ := f.Readdirnames(maxFoldProbes)
	f.Close()
	for _, n := range names {
		if folds, decided := sameUnderSwap(dir, n); decided {
			return folds, foldEvidence(dir, n, folds)
		}
	}
	name, err := probeFile(dir)
	if err != nil {
		return true, fmt.Sprintf("none of %s's names tells, and no probe could be made there: %v", dir, err)
	}
	defer os.Remove(filepath.Join(dir, name))
	folds, decided := sameUnderSwap(dir, name)
	if !decided {
		return true, fmt.Sprintf("a probe in %s did not tell", dir)
	}
	return folds, foldEvidence(dir, name, folds)
}

// probeFile makes an empty file of a new name with ASCII letters in dir
// and returns the name. It is named as a placeholder being made is, so the
// tools of a sandbox running meanwhile never show it.
func probeFile(dir string) (string, error) {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	name := placeholderTempPrefix + "case-probe-" + hex.EncodeToString(b)
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return "", err
	}
	return name, f.Close()
}

// placeholderTempPrefix is wire.PlaceholderTempPrefix (this package
// imports no airlock package but hostrule).
const placeholderTempPrefix = ".airlock-placeholder-"

// sameUnderSwap looks name up in dir as it is and with the case of its
// ASCII letters swapped: decided when the swapped spelling is missing (not
// folding) or the same file (folding); a name with no ASCII letter, or two
// different files, tell nothing.
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

// swapCase is s with the case of each ASCII letter swapped.
func swapCase(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case 'a' <= r && r <= 'z':
			return r - 'a' + 'A'
		case 'A' <= r && r <= 'Z':
			return r - 'A' + 'a'
		}
		return r
	}, s)
}
