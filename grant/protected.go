package grant

import (
	"io/fs"
	"os"
	"path/filepath"
	"slices"
)

// Names of protected paths. Inside a read-write tree these stay read-only,
// whether or not they exist yet, unless the grant lists the name under
// paths.writable_protected:
//
//   - ".git/hooks" and ".git/config" of the tree's own repository (the rest
//     of .git stays writable so commits work);
//   - ".git": a .git pointer file at the top of the tree, and every nested
//     repository's .git at any depth below it;
//   - shell rc files and .envrc, anywhere in the tree;
//   - ".mcp.json" and editor and agent settings directories, anywhere.
var (
	shellRCNames = []string{
		".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile",
		".zshrc", ".zshenv", ".zprofile", ".zlogin", ".zlogout", ".envrc",
	}
	settingsNames = []string{
		".mcp.json", ".vscode", ".idea", ".zed", ".cursor", ".claude", ".codex", ".gemini", ".continue", ".windsurf",
	}
)

// ProtectedNames lists every name paths.writable_protected accepts.
func ProtectedNames() []string {
	out := []string{".git/hooks", ".git/config", ".git"}
	out = append(out, shellRCNames...)
	return append(out, settingsNames...)
}

// protectedRule returns the protected name that covers the path whose
// components below a read-write root are rel, or "". final says whether rel
// is the path being written rather than a location passed through on the way.
func protectedRule(rel []string, final bool) string {
	for i, c := range rel {
		switch {
		case c == ".git" && i == 0:
			switch {
			case len(rel) == 1 && final:
				return ".git"
			case len(rel) >= 2 && rel[1] == "hooks":
				return ".git/hooks"
			case len(rel) >= 2 && rel[1] == "config":
				return ".git/config"
			}
		case c == ".git":
			return ".git"
		case slices.Contains(shellRCNames, c), slices.Contains(settingsNames, c):
			return c
		}
	}
	return ""
}

// protectedPath is one protected path of a read-write tree.
type protectedPath struct {
	path string // absolute; resolved up to the path itself
	name string // its entry in ProtectedNames
}

// ruleParts returns the components of loc below the read-write root r that
// protectedRule judges. A root that is itself a .git directory counts as
// its repository's .git, so granting it does not expose its hooks.
func ruleParts(loc, r string) []string {
	rel := relParts(loc, r)
	if filepath.Base(r) == ".git" {
		rel = append([]string{".git"}, rel...)
	}
	return rel
}

// maxProtectedScan bounds the directory entries scanned for nested protected
// paths when a grant is built.
const maxProtectedScan = 20000

// protectedPaths lists the protected paths of a read-write directory root:
// those at its top (existing or not) and nested ones found by a bounded scan
// that does not follow symlinks. It reports whether the scan was complete.
// Nested read-write roots (others) are left to their own scan.
func protectedPaths(r string, writable map[string]bool, others []string) ([]protectedPath, bool) {
	var out []protectedPath
	add := func(p, rule string) {
		if writable[rule] {
			return
		}
		out = append(out, protectedPath{path: p, name: rule})
		// A protected path that is a symlink protects its target too, so
		// writing the target directly is refused as well.
		if res, err := resolve(p); err == nil && res.path != p && within(res.path, r) && res.path != r {
			out = append(out, protectedPath{path: res.path, name: rule})
		}
	}
	gitDir := filepath.Join(r, ".git")
	if filepath.Base(r) == ".git" {
		gitDir = r
	}
	if fi, err := os.Lstat(gitDir); err == nil && !fi.IsDir() {
		add(gitDir, ".git")
	} else {
		add(filepath.Join(gitDir, "hooks"), ".git/hooks")
		add(filepath.Join(gitDir, "config"), ".git/config")
	}
	for _, n := range append(slices.Clone(shellRCNames), settingsNames...) {
		add(filepath.Join(r, n), n)
	}
	seen := 0
	complete := true
	_ = filepath.WalkDir(r, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == r {
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
		rel := relParts(p, r)
		if gitDir == r && len(rel) == 1 && (rel[0] == "hooks" || rel[0] == "config") {
			return nil
		}
		if len(rel) == 1 {
			// Top-level names were added above; do not descend into them.
			if rel[0] == ".git" || protectedRule(rel, true) != "" {
				if d.IsDir() {
					return filepath.SkipDir
				}
			}
			return nil
		}
		if rule := protectedRule(rel[len(rel)-1:], false); rule != "" || rel[len(rel)-1] == ".git" {
			if rule == "" {
				rule = ".git"
			}
			add(p, rule)
			if d.IsDir() {
				return filepath.SkipDir
			}
		}
		return nil
	})
	return out, complete
}
