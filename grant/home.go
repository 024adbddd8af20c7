package grant

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// A home directory's top is where the user's shells, editors, language
// runtimes and desktop look for files to run: .bashrc and .profile, but
// also .bash_aliases, .local/lib/python*/site-packages/*.pth, .nvm/nvm.sh
// sourced when it exists, .config/*, .kube/config exec plugins, .aws/config
// credential_process, and more than any list holds. So a home directory
// granted read-write is granted as its existing directories whose names do
// not start with a dot, each read-write (with its own protected paths),
// under a read-only top: nothing can be made or changed at the top, and
// every existing dot entry stays read-only. (Files at the top stay
// read-only too: one of them may be airlock's own, a grant or a token
// file, which no sandbox may be given as a whole.)

// isHomeDir reports whether the resolved directory p is a home directory
// for this purpose: /root, a directory directly in /home, or this user's
// home directory.
func isHomeDir(p string) bool {
	if p == "/root" || filepath.Dir(p) == "/home" {
		return true
	}
	home, err := os.UserHomeDir()
	if err != nil || home == "" {
		return false
	}
	if res, err := resolve(filepath.Clean(home)); err == nil && res.missing == 0 {
		home = res.path
	}
	return p == home
}

// splitHomes replaces each read-write root that is a home directory by a
// read-only one and a read-write root for each of its directories whose
// name does not start with a dot (a symlink is left as it is, under the
// read-only top). Entries already granted keep their own grant.
func splitHomes(roots []root) []root {
	var out []root
	for _, r := range roots {
		if !r.writable || !r.dir || !isHomeDir(r.path) {
			out = append(out, r)
			continue
		}
		r.writable, r.homeTop = false, true
		out = append(out, r)
		entries, err := os.ReadDir(r.path)
		if err != nil {
			continue
		}
		for _, e := range entries {
			name := e.Name()
			if strings.HasPrefix(name, ".") || !e.IsDir() {
				continue
			}
			child := filepath.Join(r.path, name)
			if slices.ContainsFunc(roots, func(o root) bool { return o.path == child }) {
				continue
			}
			out = append(out, root{given: r.given, path: child, dir: true, writable: true})
		}
	}
	slices.SortStableFunc(out, func(a, b root) int { return len(b.path) - len(a.path) })
	return out
}
