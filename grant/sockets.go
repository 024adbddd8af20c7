package grant

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// socketRule names a Unix socket a scan finds in a granted tree.
// Such a socket is hidden (denied), not made read-only: connecting to a
// Unix socket needs write permission on it, which a read-only mount does
// not take away, and Landlock below ABI 9 does not govern connect, so a
// sandbox that saw the host's socket of a database, a dev server, an
// agent or a container engine could talk to that service outside every
// grant. A socket the sandbox makes itself (a test's server) is its own
// and stays usable while the call runs.
const socketRule = "a Unix socket"

// splitSockets takes the sockets out of a scan's protected paths: they
// are hidden (hideSockets), not held read-only.
func splitSockets(list []protectedPath) (rest []protectedPath, sockets []string) {
	rest = list[:0]
	for _, p := range list {
		if p.name == socketRule {
			sockets = append(sockets, p.path)
			continue
		}
		rest = append(rest, p)
	}
	return rest, sockets
}

// hideSockets denies each of the Unix sockets a scan found in g's
// trees, as paths.deny would, unless a denied path holds it already (no
// grant names a socket itself: resolveRoot refuses one). It records them
// in g.sockets, so a refusal says why.
func (g *Grant) hideSockets(sockets []string) {
	for _, p := range sockets {
		if slices.ContainsFunc(g.deny, func(d string) bool { return within(p, d) }) {
			continue
		}
		if g.sockets == nil {
			g.sockets = map[string]bool{}
		}
		g.deny = append(g.deny, p)
		g.sockets[p] = true
	}
}

// socketReason says why the Unix socket d (hidden by hideSockets) is
// refused.
func socketReason(d string) string {
	return fmt.Sprintf("%s is a Unix socket of the host, hidden from the sandbox: connecting to it would reach a host service outside the grant, and no grant setting opens one (a sandbox reaches a host service only over the network, as network.private grants it)", d)
}

// readOnlySockets lists the Unix sockets in g's read-only directory trees
// that no read-write tree holds (the scan of a read-write tree finds
// those), and the trees not read whole.
func (g *Grant) readOnlySockets() (sockets, unscanned []string) {
	var dirs []string
	for _, r := range g.roots {
		if r.dir {
			dirs = append(dirs, r.path)
		}
	}
	for _, r := range g.roots {
		if !r.dir || r.writable || slices.ContainsFunc(g.roots, func(w root) bool { return w.writable && w.dir && w.path != r.path && within(r.path, w.path) }) {
			continue
		}
		found, complete := findSockets(r.path, dirs)
		sockets = append(sockets, found...)
		if !complete {
			unscanned = append(unscanned, r.path)
		}
	}
	return sockets, unscanned
}

// findSockets lists the Unix sockets below the directory r, breadth first
// (a service's socket is seldom deep, and where a tree is too large to
// read whole the shallow ones are found), not following symlinks and
// leaving out the granted trees in others (each read as its own). It
// reads at most maxProtectedScan entries and reports whether it read
// every one; a directory it cannot list makes it incomplete.
func findSockets(r string, others []string) ([]string, bool) {
	var out []string
	queue := []string{r}
	seen := 0
	complete := true
	for len(queue) > 0 {
		dir := queue[0]
		queue = queue[1:]
		f, err := openDir(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist), errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.ELOOP):
			// Gone, or no longer a directory since it was listed: it
			// holds nothing to scan.
			continue
		case err != nil:
			complete = false
			continue
		}
		ents, err := f.ReadDir(-1)
		f.Close()
		if err != nil {
			complete = false
		}
		slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
		for _, e := range ents {
			seen++
			if seen > maxProtectedScan {
				return out, false
			}
			p := filepath.Join(dir, e.Name())
			switch t := e.Type(); {
			case t&fs.ModeSocket != 0:
				out = append(out, p)
			case t.IsDir() && !slices.Contains(others, p):
				queue = append(queue, p)
			}
		}
	}
	return out, complete
}

// unscannedSocketsRisk says what an incomplete scan of the read-only
// tree t for Unix sockets leaves.
func unscannedSocketsRisk(t string) string {
	n := fmt.Sprintf("%d,%03d", maxProtectedScan/1000, maxProtectedScan%1000)
	return fmt.Sprintf("read-only tree %q was not scanned whole for Unix sockets (more than %s entries, or a directory the scan could not read): "+
		"a host service's socket past the first %s entries is not hidden, and a sandbox could connect to it; grant a smaller tree", t, n, n)
}
