package initproto

import (
	"path/filepath"
	"strings"
)

// Within reports whether sandbox path p is dir or lies below it. Both are
// cleaned first, so a trailing slash changes nothing, and "/a/bc" is not
// within "/a/b".
func Within(p, dir string) bool {
	p, dir = filepath.Clean(p), filepath.Clean(dir)
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// Holding returns the mount that holds sandbox path p: of the mounts whose
// target p is within, the one with the longest target (the innermost, on
// top of those it is nested in; the first of equals). ok is false when no
// mount holds p. This is the one rule for "which grant is p in" on both
// sides: the init asks it of a path, the host of a path's parent to find
// the tree a name would be created in.
func Holding(mounts []Mount, p string) (m Mount, ok bool) {
	best := -1
	for i, m := range mounts {
		if Within(p, m.Target) && (best < 0 || len(filepath.Clean(m.Target)) > len(filepath.Clean(mounts[best].Target))) {
			best = i
		}
	}
	if best < 0 {
		return Mount{}, false
	}
	return mounts[best], true
}

// Rel returns sandbox path p, which must be within m's target, relative
// to the target: "." for the target itself.
func (m Mount) Rel(p string) string {
	p, t := filepath.Clean(p), filepath.Clean(m.Target)
	if p == t {
		return "."
	}
	return strings.TrimPrefix(p, strings.TrimSuffix(t, "/")+"/")
}

// HostPath returns the host path behind sandbox path p, which must be
// within m's target.
func (m Mount) HostPath(p string) string { return filepath.Join(m.Source, m.Rel(p)) }
