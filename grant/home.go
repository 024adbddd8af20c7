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
// for this purpose: /root, a directory directly in /home, this user's home
// directory home (userHome), or one that looks like a home directory.
func isHomeDir(p, home string) bool {
	if p == "/root" || filepath.Dir(p) == "/home" || p == home {
		return true
	}
	// A home directory the user database names is one, even a service
	// account's that holds none of a person's files yet (the git
	// account's /srv/git, whose .ssh/authorized_keys a sandbox would
	// otherwise make).
	if slices.Contains(passwdHomes(), p) {
		return true
	}
	// Elsewhere (a service account's home, a home directory a root broker
	// is given): one that holds .ssh, or .bashrc with .profile,
	// .bash_profile or .bash_logout, the files every new account gets
	// (Debian's skeleton, or Fedora's), none of them a placeholder, and
	// then no repository (a dotfiles repository holds them too).
	real := func(n string, dir bool) bool {
		fi, err := os.Lstat(filepath.Join(p, n))
		return err == nil && fi.IsDir() == dir && (dir || fi.Mode().IsRegular()) && !isPlaceholder(filepath.Join(p, n))
	}
	if real(".ssh", true) {
		return true
	}
	// (.bashrc first: most directories lack it, and every read-write
	// root's directories are asked, at every session's start.)
	if !real(".bashrc", false) {
		return false
	}
	login := real(".profile", false) || real(".bash_profile", false) || real(".bash_logout", false)
	return login && !gitRepository(filepath.Join(p, ".git"))
}

// userHome returns this user's home directory, resolved, or "".
func userHome() string {
	home, err := os.UserHomeDir()
	if err != nil || home == "" || !filepath.IsAbs(home) {
		return ""
	}
	res, err := resolve(filepath.Clean(home))
	if err != nil || res.missing > 0 {
		return ""
	}
	return res.path
}

// homesAbove returns the home directories that hold the resolved path p
// below their top: this user's, /root, the one directly in /home that p
// lies in, and those the user database names (passwdHomes). What a home
// directory's protected entries name (.config/autostart, .local/bin) is
// named from its top, so a tree granted inside it (~/.config) holds them
// too.
func homesAbove(p string) []string {
	var out []string
	for _, h := range append([]string{userHome(), "/root"}, passwdHomes()...) {
		if h != "" && h != p && within(p, h) {
			out = append(out, h)
		}
	}
	if rel, ok := strings.CutPrefix(p, "/home/"); ok {
		if first, _, more := strings.Cut(rel, "/"); more && first != "" {
			out = append(out, "/home/"+first)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// homeEntryHolding returns the protected entry of a home directory
// (Where "home") that holds the resolved path p, and that entry's path:
// ~/.config/systemd/user lies in .config/systemd. A read-write grant of
// one cannot be held read-only from inside.
func homeEntryHolding(p string) (ProtectedEntry, string, bool) {
	for _, h := range homesAbove(p) {
		for _, e := range protectedTable {
			if e.Where != "home" {
				continue
			}
			if hp := filepath.Join(h, filepath.FromSlash(e.Name)); within(p, hp) {
				return e, hp, true
			}
		}
	}
	return ProtectedEntry{}, "", false
}

// homeReadOnly are directories of a home directory that stay read-only
// with its top although their names have no dot: what is on PATH or found
// by a runtime's lookup from any directory below home (~/bin, which
// Debian's .profile puts first on PATH; ~/go/bin; ~/perl5/bin with
// local::lib; ~/node_modules, which node searches from every project in the
// home directory).
var homeReadOnly = []string{"bin", "go", "node_modules", "perl5"}

// A directory split out of a home directory is a tree of its own, but its
// missing top-level protected names are not held: they are names below the
// top of the home directory, as they were before the split, and holding
// them would put some fifty placeholders in every directory of the home
// directory for each call. Its existing protected paths, and the parts of
// an existing repository's .git, are protected as in any tree.
//
// splitHomes replaces each read-write root that is a home directory by a
// read-only one and a read-write root for each of its directories whose
// name does not start with a dot (a symlink is left as it is, under the
// read-only top), but homeReadOnly. A home directory inside a read-write
// root (a parent of it granted) gets the same, as a read-only root of its
// own. Entries already granted keep their own grant.
func splitHomes(roots []root, gl *gitGlobals) []root {
	home := userHome()
	var out []root
	for _, r := range roots {
		if !r.writable || !r.dir || !isHomeDir(r.path, home) {
			out = append(out, r)
			continue
		}
		r.writable, r.homeTop = false, true
		out = append(out, r)
		out = append(out, homeDirsOf(r, roots, gl)...)
	}
	slices.SortStableFunc(out, func(a, b root) int { return len(b.path) - len(a.path) })
	// Home directories inside a read-write root: this user's, /root, and
	// any directory directly in a read-write root that is or looks like a
	// home directory (a root broker run from a directory of homes).
	candidates := []string{home, "/root"}
	for _, r := range out {
		if !r.writable || !r.dir {
			continue
		}
		entries, err := os.ReadDir(r.path)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if c := filepath.Join(r.path, e.Name()); e.IsDir() && isHomeDir(c, home) {
				candidates = append(candidates, c)
			}
		}
	}
	for _, h := range candidates {
		if h == "" || slices.ContainsFunc(out, func(o root) bool { return o.path == h }) {
			continue
		}
		if fi, err := os.Lstat(h); err != nil || !fi.IsDir() {
			continue
		}
		i := slices.IndexFunc(out, func(o root) bool { return within(h, o.path) })
		if i < 0 || !out[i].writable || !out[i].dir {
			continue
		}
		hr := root{given: out[i].given, path: h, dir: true, homeTop: true}
		out = append(out, hr)
		out = append(out, homeDirsOf(hr, out, gl)...)
		slices.SortStableFunc(out, func(a, b root) int { return len(b.path) - len(a.path) })
	}
	return out
}

// homeDirsOf returns a read-write root for each directory of the home
// directory h whose name has no dot in front and is not in homeReadOnly,
// nor named by the shell's start-up files or PATH (homeNamedDirs), nor
// holds or lies in the user's hooks directory, but those already in roots.
func homeDirsOf(h root, roots []root, gl *gitGlobals) []root {
	entries, err := os.ReadDir(h.path)
	if err != nil {
		return nil
	}
	named := homeNamedDirs(h.path)
	var out []root
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || !e.IsDir() || slices.Contains(homeReadOnly, name) || named[name] {
			continue
		}
		child := filepath.Join(h.path, name)
		// The user's hooks and template directories stay read-only with
		// the top.
		if slices.ContainsFunc(append(slices.Clip(gl.hooksDirs), gl.templateDirs...), func(d string) bool { return within(d, child) || within(child, d) }) {
			continue
		}
		if slices.ContainsFunc(roots, func(o root) bool { return o.path == child }) {
			continue
		}
		out = append(out, root{given: h.given, path: child, dir: true, writable: true, homeDir: true})
	}
	return out
}

// homeLinkRule names the protection of a file or directory that a symlink
// in a home directory's read-only dot entries leads to inside a read-write
// tree (a dotfiles repository linked in by stow): writing it writes the
// start-up file. No grant setting makes it writable.
const homeLinkRule = "a home directory's start-up file, through a symlink"

// maxHomeLinkScan bounds the entries of each of a home directory's dot
// entries looked at for symlinks, and maxHomeLinkDepth how deep below it.
const (
	maxHomeLinkScan  = 5000
	maxHomeLinkDepth = 4
)

// homeLinks returns the protected paths the symlinks among the dot entries
// of the home directory h (a homeTop root) lead to inside a read-write root
// of g. The scan follows no symlink and looks at most at maxHomeLinkScan
// entries.
func (g *Grant) homeLinks(h string) []protectedPath {
	var out []protectedPath
	entries, err := os.ReadDir(h)
	if err != nil {
		return nil
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") {
			continue
		}
		// Each dot entry has a budget of its own, so a large cache
		// directory cannot use up the others', and the walk goes no
		// deeper than start-up files are kept.
		seen, top := 0, filepath.Join(h, e.Name())
		_ = filepath.WalkDir(top, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			if seen++; seen > maxHomeLinkScan {
				return filepath.SkipAll
			}
			if d.IsDir() && p != top && strings.Count(p[len(top):], "/") >= maxHomeLinkDepth {
				return filepath.SkipDir
			}
			if d.Type()&os.ModeSymlink == 0 {
				return nil
			}
			res, err := resolve(p)
			if err != nil || res.missing > 0 {
				return nil
			}
			if owner, ok := g.rootOf(res.path); ok && owner.writable && res.path != owner.path {
				fi, err := os.Lstat(res.path)
				out = append(out, protectedPath{path: res.path, name: homeLinkRule, dir: err == nil && fi.IsDir()})
			}
			return nil
		})
	}
	return out
}

// homeStartup are the shell start-up files of a home directory whose
// mentions of directories in it keep those read-only.
var homeStartup = []string{".bashrc", ".bash_profile", ".bash_login", ".bash_aliases", ".profile",
	".zshrc", ".zshenv", ".zprofile", ".zlogin", ".kshrc", ".cshrc", ".tcshrc", ".login", ".config/fish/config.fish"}

// homeStartupDirs are directories of start-up snippets that shells source
// from a home directory (Fedora's .bashrc sources ~/.bashrc.d/*).
var homeStartupDirs = []string{".bashrc.d", ".bash_profile.d", ".profile.d", ".zshrc.d", ".config/bash", ".config/zsh", ".config/shell"}

// startupFiles lists the shell start-up files of the home directory h, as
// paths relative to it: homeStartup, and the first 100 files of each of
// homeStartupDirs.
func startupFiles(h string) []string {
	files := slices.Clone(homeStartup)
	for _, d := range homeStartupDirs {
		if entries, err := os.ReadDir(filepath.Join(h, d)); err == nil {
			for i, e := range entries {
				if i < 100 && !e.IsDir() {
					files = append(files, filepath.Join(d, e.Name()))
				}
			}
		}
	}
	return files
}

// homeNamedDirs returns the names of the home directory h's entries that
// its shell start-up files mention (as h/NAME, ~/NAME, $HOME/NAME or
// ${HOME}/NAME: an installer's "conda init" block, a sourced
// google-cloud-sdk/path.bash.inc, a PATH entry) or that PATH holds: what is
// in them runs in every new shell, so they stay read-only with the top.
func homeNamedDirs(h string) map[string]bool {
	names := map[string]bool{}
	note := func(rest string) {
		end := strings.IndexFunc(rest, func(c rune) bool {
			return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' || c == '+' || c == '@')
		})
		if end < 0 {
			end = len(rest)
		}
		if name := rest[:end]; name != "" && !strings.HasPrefix(name, ".") {
			names[name] = true
		}
	}
	files := startupFiles(h)
	for _, f := range files {
		b, _, err := readTreeFile(filepath.Join(h, f), true, 1<<20)
		if err != nil {
			continue
		}
		text := string(b)
		for _, prefix := range []string{h + "/", "~/", "HOME"} {
			for rest := text; ; {
				i := strings.Index(rest, prefix)
				if i < 0 {
					break
				}
				rest = rest[i+len(prefix):]
				if prefix == "HOME" {
					// $HOME/, ${HOME}/, "$HOME"/, "${HOME}"/
					r := strings.TrimLeft(rest, "}\"'")
					if !strings.HasPrefix(r, "/") {
						continue
					}
					note(r[1:])
					continue
				}
				note(rest)
			}
		}
	}
	for _, p := range filepath.SplitList(os.Getenv("PATH")) {
		if filepath.IsAbs(p) && within(filepath.Clean(p), h) && filepath.Clean(p) != h {
			rel, _ := filepath.Rel(h, filepath.Clean(p))
			note(rel)
		}
	}
	return names
}

// maxStartupRefs bounds the paths homeStartupRefs looks at in one home
// directory's start-up files (one of which may be a sandbox's, through a
// symlink into a read-write tree).
const maxStartupRefs = 1000

// homeStartupRefs protects, for the user's home directory h when no grant
// holds it (its start-up files are then outside every sandbox), what those
// files lead into g's read-write trees: a start-up file that is a symlink
// into one (a dotfiles repository linked in by stow), and each file a
// start-up file names there (as h/..., ~/..., $HOME/... or an absolute
// path: a sourced env.sh). Writing either runs code in the user's next
// shell.
func (g *Grant) homeStartupRefs(h string) []protectedPath {
	var out []protectedPath
	looked := 0
	take := func(p string) {
		looked++
		res, err := resolve(filepath.Clean(p))
		if err != nil || res.missing > 0 {
			return
		}
		owner, ok := g.rootOf(res.path)
		if !ok || !owner.writable || res.path == owner.path {
			return
		}
		fi, err := os.Lstat(res.path)
		if err != nil || fi.IsDir() {
			return // a directory named (cd ~/work) is not code
		}
		out = append(out, protectedPath{path: res.path, name: homeLinkRule})
	}
	files := startupFiles(h)
	pathChar := func(c rune) bool {
		return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("._-+@/", c)
	}
	for _, f := range files {
		p := filepath.Join(h, f)
		take(p) // a symlink into a read-write tree
		b, _, err := readTreeFile(p, true, 1<<20)
		if err != nil {
			continue
		}
		text := string(b)
		for _, prefix := range []string{h + "/", "~/", "$HOME/", "${HOME}/", "/"} {
			for rest := text; looked < maxStartupRefs; {
				i := strings.Index(rest, prefix)
				if i < 0 {
					break
				}
				before := rest[:i]
				rest = rest[i+len(prefix):]
				if prefix == "/" && before != "" && pathChar(rune(before[len(before)-1])) {
					continue // inside a word, or a path taken whole already
				}
				end := strings.IndexFunc(rest, func(c rune) bool { return !pathChar(c) })
				if end < 0 {
					end = len(rest)
				}
				if end == 0 {
					continue
				}
				base := h
				if prefix == "/" {
					base = "/"
				}
				take(filepath.Join(base, rest[:end]))
			}
		}
	}
	return out
}
