package grant

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// nestedFound receives a protected name found below the top of a
// read-write tree: its path, its name (the rule) and whether it is a
// directory.
type nestedFound func(p, name string, dir bool)

// walkNested is the portable scan for nested protected names below the
// read-write root r (filepath.WalkDir, one lstat-free ReadDir per
// directory, sorted). It visits at most maxProtectedScan entries, does not
// follow symlinks, skips the nested read-write roots in others and the
// top-level protected names (added by the caller), and reports whether
// it saw every entry (a directory it could not read makes it incomplete). rootIsGit says r is itself a .git directory, whose
// top-level entries are not protected names. Found names are not
// descended into.
func walkNested(r string, rootIsGit bool, others []string, found nestedFound) bool {
	seen := 0
	complete := true
	_ = filepath.WalkDir(r, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			// A directory that could not be read holds what the scan did
			// not see (one gone meanwhile holds nothing).
			if !errors.Is(err, fs.ErrNotExist) {
				complete = false
			}
			return nil
		}
		if p == r {
			return nil
		}
		if d.IsDir() && slices.Contains(others, p) {
			return filepath.SkipDir
		}
		seen++
		if seen > maxProtectedScan {
			complete = false
			return filepath.SkipAll
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil && fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid) != 0 {
				found(p, setIDRule, false)
			}
		}
		if d.Type()&fs.ModeSocket != 0 {
			found(p, socketRule, false)
		}
		rel := relParts(p, r)
		// A directory git takes for a repository is held whole, as a
		// nested .git is, whatever its name, unless its name is protected
		// and so handled as that.
		repo := func() error {
			if d.IsDir() && repositoryDir(p) {
				found(p, ".git", true)
				return filepath.SkipDir
			}
			return nil
		}
		if rootIsGit && len(rel) == 1 {
			return repo()
		}
		if len(rel) == 1 {
			// Top-level names were added by the caller; do not descend into them.
			if rel[0] == ".git" || protectedRule(rel, true) != "" {
				if d.IsDir() {
					return filepath.SkipDir
				}
				return nil
			}
			return repo()
		}
		last := rel[len(rel)-1]
		if last == ".git" || isAnywhereName(last) {
			found(p, last, d.IsDir())
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		return repo()
	})
	return complete
}

// repositoryNames are the entries that make a directory a repository to
// git, which takes one with a HEAD and either a commondir (a linked
// worktree's administrative directory) or both objects and refs, when it
// finds no .git in it (a bare repository). Any kind of entry counts: git
// follows symlinks to objects and refs, and a directory of these names
// that git would refuse is held all the same.
var repositoryNames = [...]string{"HEAD", "commondir", "objects", "refs"}

// repositoryFrom says whether a directory holding the repositoryNames
// marked in have is a repository to git.
func repositoryFrom(have [len(repositoryNames)]bool) bool {
	return have[0] && (have[1] || have[2] && have[3])
}

// repositoryDir reports whether the directory p holds repositoryNames
// that make it a repository to git.
func repositoryDir(p string) bool {
	var have [len(repositoryNames)]bool
	for i, n := range repositoryNames {
		_, err := os.Lstat(filepath.Join(p, n))
		have[i] = err == nil
	}
	return repositoryFrom(have)
}
