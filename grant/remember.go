package grant

import (
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ProtectedPath is one path a grant keeps read-only in a read-write tree,
// as a session records it for the next one (NestedProtected, Remember).
type ProtectedPath struct {
	Path string `json:"path"` // absolute and resolved
	Name string `json:"name"` // the rule: a protected name, the set-ID rule or the socket rule
	Dir  bool   `json:"dir"`
}

// KeepFirst reports whether p protects a repository or a set-ID file,
// which a bounded memory of protected paths keeps before other names: a
// sandbox can make protected names (.bashrc, .vscode) by the thousand, but
// not a repository or a set-ID file that existed before it.
func (p ProtectedPath) KeepFirst() bool {
	switch p.Name {
	case ".git", ".hg", ".jj", ".git/config", ".git/hooks", ".git/modules", setIDRule:
		return true
	}
	return false
}

// NestedProtected returns the protected paths of g's read-write tree r
// (resolved, as WritableTrees gives it), so a session can record them for
// the next: the scan stops after 20,000 entries, and a
// sandbox that fills its tree with entries could otherwise push an existing
// nested repository past that bound for every later session.
func (g *Grant) NestedProtected(r string) []ProtectedPath {
	var out []ProtectedPath
	for _, p := range g.protected {
		if p.name == ownName || isPathDirRule(p.name) || !within(p.path, r) || p.path == r {
			continue
		}
		if owner, ok := g.rootOf(p.path); !ok || owner.path != r {
			continue
		}
		out = append(out, ProtectedPath{Path: p.path, Name: p.name, Dir: p.dir})
	}
	for _, p := range slices.Sorted(maps.Keys(g.sockets)) {
		if owner, ok := g.rootOf(p); ok && owner.path == r {
			out = append(out, ProtectedPath{Path: p, Name: socketRule})
		}
	}
	return out
}

// Remember returns a copy of g that also protects those of paths an earlier
// session recorded (NestedProtected) that still exist as they were: inside
// a read-write tree of g (not the tree itself), with no symlink on the way,
// under a rule g does not let the sandbox write, and, for a set-ID file,
// still set-ID. A recorded Unix socket that is still one is hidden, as the
// scan hides those it finds (hideSockets). It ignores any other.
func (g *Grant) Remember(paths []ProtectedPath) *Grant {
	c := *g
	c.protected = slices.Clone(g.protected)
	// A path g protects already keeps g's own rule (sortProtected keeps
	// the first of a path), so it is not resolved again: most of what a
	// tree's memory holds is the grant's own names at its top.
	own := make(map[string]bool, len(g.protected))
	for _, p := range g.protected {
		own[p.path] = true
	}
	names := ProtectedNames()
	var sockets []string
	for _, p := range paths {
		if own[p.Path] || !filepath.IsAbs(p.Path) || filepath.Clean(p.Path) != p.Path || strings.IndexByte(p.Path, 0) >= 0 {
			continue
		}
		if !slices.Contains(names, p.Name) && p.Name != setIDRule && p.Name != homeLinkRule && p.Name != socketRule && p.Name != linkedRule || g.writableProtected[p.Name] {
			continue
		}
		owner, ok := g.rootOf(p.Path)
		if !ok || !owner.writable || !owner.dir || p.Path == owner.path {
			continue
		}
		res, err := resolve(p.Path)
		if err != nil || res.missing > 0 || res.path != p.Path {
			continue
		}
		fi, err := os.Lstat(p.Path)
		if err != nil || fi.Mode()&fs.ModeSymlink != 0 {
			continue
		}
		if p.Name == setIDRule && (!fi.Mode().IsRegular() || fi.Mode()&(fs.ModeSetuid|fs.ModeSetgid) == 0) {
			continue
		}
		if p.Name == linkedRule && !linkedFile(fi) {
			continue
		}
		if p.Name == socketRule {
			if fi.Mode()&fs.ModeSocket != 0 {
				sockets = append(sockets, p.Path)
			}
			continue
		}
		c.protected = append(c.protected, protectedPath{path: p.Path, name: p.Name, dir: fi.IsDir()})
	}
	c.protected = sortProtected(c.protected)
	c.deny = slices.Clone(g.deny)
	c.sockets = maps.Clone(g.sockets)
	c.hideSockets(sockets)
	slices.Sort(c.deny)
	c.deny = slices.Compact(c.deny)
	return &c
}

// linkedFile reports whether fi is a regular file with more than one name
// (always, where the link count is not known): a recorded hard link into
// a protected directory stays protected while it may still be one.
func linkedFile(fi fs.FileInfo) bool {
	n, ok := linkCount(fi)
	return fi.Mode().IsRegular() && (!ok || n > 1)
}

// WritableTrees returns the resolved read-write directories of g.
func (g *Grant) WritableTrees() []string {
	var out []string
	for _, r := range g.roots {
		if r.writable && r.dir {
			out = append(out, r.path)
		}
	}
	return out
}
