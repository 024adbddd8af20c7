package grant

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ProtectedEntry is one row of the protected-path table: a name that a host
// tool reads and acts on (runs code from, or takes settings from that can
// run code), so that a sandbox writing it could get code run on the host.
type ProtectedEntry struct {
	// Name is a file or directory name (".bashrc", ".vscode"), or for the
	// entries that hold only at the top of a tree, a short path
	// (".git/hooks", ".config/git").
	Name string
	// Dir says the name is a directory; a missing one is held as an empty
	// directory, any other missing name as an empty file.
	Dir bool
	// Where is "anywhere" (at any depth of a read-write tree), "top" (at the
	// top of each read-write tree only) or "home" (at the top of a tree that
	// is a home directory: missing ones are held only there).
	Where string
	// Reader says which host tool acts on it.
	Reader string
}

// PlaceholderXattr is the mark of airlock's placeholders:
// wire.PlaceholderXattr, which grant, importing only the standard library,
// toml and hostrule, names again (TestPlaceholderXattrIsWires).
const PlaceholderXattr = "user.airlock.placeholder"

// The protected-path table. Inside a read-write tree these stay read-only,
// whether or not they exist yet, unless the grant lists the name under
// paths.writable_protected. docs/protected-paths.md shows this table; a
// test keeps the two the same.
var protectedTable = []ProtectedEntry{
	// git: the tree's own repository. Its objects, refs and index stay
	// writable so commits work; what configures or runs code does not.
	{".git", true, "top", "git: a missing .git is held whole, and a missing HEAD with it (no repository, bare or not, can be planted at the top); a .git file (a worktree's pointer) is read-only; nested repositories, bare ones and worktrees' directories by any name too, are read-only whole"},
	{".git/hooks", true, "top", "git runs hooks on commit, checkout, merge, push"},
	{".git/config", false, "top", "git: core.fsmonitor, core.pager, core.sshCommand, filters, aliases run commands on status, diff, log; also .git/config.worktree, .git/commondir (which points git at another config) and .git/worktrees (linked worktrees' commondir and config.worktree)"},
	{".git/modules", true, "top", "git: submodules' own config and hooks, read by status and diff"},
	{".gitmodules", false, "anywhere", "git: submodule URLs and update commands"},
	{".gitconfig", false, "anywhere", "git: the user's configuration (a home directory)"},
	// Other version control systems whose repository configuration runs
	// commands. A missing one is held as an empty file (neither tool takes
	// a file for a repository); at the top of a tree that is one, only the
	// configuration is read-only, so commits work; nested ones whole.
	{".hg", false, "anywhere", "Mercurial: .hg/hgrc hooks run on hg commands (at the top of a Mercurial repository only .hg/hgrc, hgrc-not-shared and sharedpath are read-only)"},
	{".jj", false, "anywhere", "Jujutsu: .jj/repo/config.toml aliases, pager and diff tools run on jj commands (at the top of a jj repository only that file is read-only)"},
	{".config/git", true, "home", "git: the user's XDG configuration"},
	// Shells and the login session.
	{".bashrc", false, "anywhere", "bash"},
	{".bash_profile", false, "anywhere", "bash"},
	{".bash_login", false, "anywhere", "bash"},
	{".bash_logout", false, "anywhere", "bash"},
	{".profile", false, "anywhere", "sh, dash, bash login shells"},
	{".zshrc", false, "anywhere", "zsh"},
	{".zshenv", false, "anywhere", "zsh"},
	{".zprofile", false, "anywhere", "zsh"},
	{".zlogin", false, "anywhere", "zsh"},
	{".zlogout", false, "anywhere", "zsh"},
	{".kshrc", false, "anywhere", "ksh"},
	{".cshrc", false, "anywhere", "csh, tcsh"},
	{".tcshrc", false, "anywhere", "tcsh"},
	{".login", false, "anywhere", "csh, tcsh"},
	{".envrc", false, "anywhere", "direnv (on cd, once allowed)"},
	{".config/fish", true, "home", "fish"},
	{".config/autostart", true, "home", "desktop sessions start these programs"},
	{".config/systemd", true, "home", "systemd --user units"},
	{".local/bin", true, "home", "on PATH in most distributions' login profiles"},
	{".ssh", true, "home", "ssh: config (ProxyCommand, LocalCommand) and authorized_keys"},
	// Editors and agents: project settings that can run tasks, hooks or servers.
	{".mcp.json", false, "anywhere", "Claude Code and other MCP clients start the servers it lists"},
	{".vscode", true, "anywhere", "VS Code: tasks, launch configurations, settings"},
	{".devcontainer", true, "anywhere", "VS Code dev containers: lifecycle commands"},
	{".idea", true, "anywhere", "JetBrains IDEs: run configurations, tools"},
	{".zed", true, "anywhere", "Zed: tasks, settings"},
	{".exrc", false, "anywhere", "vi and vim with 'exrc' set"},
	{".nvim.lua", false, "anywhere", "neovim with 'exrc' set"},
	{".nvimrc", false, "anywhere", "neovim with 'exrc' set"},
	{".vimrc", false, "anywhere", "vim with 'exrc' set (and the user's own in a home directory)"},
	{"_vimrc", false, "anywhere", "vim with 'exrc' set"},
	{"_exrc", false, "anywhere", "vim with 'exrc' set"},
	{".gvimrc", false, "anywhere", "gvim with 'exrc' set"},
	{".gdbinit", false, "anywhere", "gdb, where its auto-load safe-path allows the directory (and the user's own in a home directory)"},
	{".irbrc", false, "anywhere", "irb reads it from the current directory"},
	{".pryrc", false, "anywhere", "pry reads it from the current directory"},
	{".octaverc", false, "anywhere", "GNU Octave reads it from the current directory"},
	{".pdbrc", false, "anywhere", "Python's pdb (breakpoint(), pytest --pdb) reads it from the current directory"},
	{".perldb", false, "anywhere", "perl -d reads it from the current directory"},
	{".ghci", false, "anywhere", "GHCi reads it from the current directory"},
	{".cursor", true, "anywhere", "Cursor: rules, hooks, MCP servers"},
	{".claude", true, "anywhere", "Claude Code: settings with hooks"},
	{".codex", true, "anywhere", "Codex: configuration"},
	{".gemini", true, "anywhere", "Gemini CLI: settings"},
	{".continue", true, "anywhere", "Continue: configuration"},
	{".windsurf", true, "anywhere", "Windsurf: rules, workflows"},
	// Package managers and language tools whose project files run code.
	{".npmrc", false, "anywhere", "npm: script-shell, node-options, git and other commands"},
	{".yarnrc", false, "anywhere", "yarn 1: yarn-path runs a script"},
	{".yarnrc.yml", false, "anywhere", "yarn 2+: yarnPath runs a script"},
	{".pnpmfile.cjs", false, "anywhere", "pnpm runs its hooks on install"},
	{".cargo", true, "anywhere", "cargo: config.toml (rustc-wrapper, runners, aliases)"},
	{".Rprofile", false, "anywhere", "R runs it at start-up in the directory"},
	{".ripgreprc", false, "anywhere", "ripgrep, where RIPGREP_CONFIG_PATH names it (--pre runs a command)"},
}

// gitConfigNames are the files of a repository's .git directory that
// configure it, all covered by the ".git/config" entry.
var gitConfigNames = []string{"config", "config.worktree", "commondir"}

// gitFileDir returns the directory a .git file at p names, resolved,
// wherever it is (a linked worktree's administrative directory, a
// submodule's), or false when p is no such file.
func gitFileDir(p string) (string, bool) {
	// A symlink or anything but a plain file names nothing here (it is held
	// whole all the same); a fifo must not block the broker.
	b, _, err := readTreeFile(p, false, 4096)
	if err != nil {
		return "", false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	target, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), "gitdir: ")
	if !ok || target == "" {
		return "", false
	}
	if !filepath.IsAbs(target) {
		target = filepath.Join(filepath.Dir(p), target)
	}
	res, err := resolve(filepath.Clean(target))
	if err != nil {
		return "", false
	}
	return res.path, true
}

// vcsConfig names, for a version control directory at the top of a tree
// that is one of its repositories, the files of it that configure commands
// or point it at another repository's (Mercurial's sharedpath, as git's
// commondir).
var vcsConfig = map[string][]string{
	".hg": {"hgrc", "hgrc-not-shared", "sharedpath"},
	".jj": {"repo/config.toml"},
}

// isDir reports whether p is a directory, not following a symlink.
func isDir(p string) bool {
	fi, err := os.Lstat(p)
	return err == nil && fi.IsDir()
}

// setIDRule names the protection of a set-user-ID or set-group-ID regular
// file the scan finds in a read-write tree: read-only, since a write
// through a shared mapping changes its content and keeps the bit (only
// write(2) clears it), and anyone on the host who runs it would run the
// sandbox's code as its owner. No grant setting makes one writable.
const setIDRule = "a set-user-ID or set-group-ID file"

// inWritableTree reports whether p lies below the read-write tree r or one
// of the grant's other read-write trees (others), not at the top of one:
// where a symlink in a protected path leads that the sandbox could write.
// A hook linked into another granted tree (a shared scripts checkout) is
// run by host git as surely as one linked into its own.
func inWritableTree(p, r string, others []string) bool {
	if within(p, r) && p != r {
		return true
	}
	for _, o := range others {
		if within(p, o) && p != o {
			return true
		}
	}
	return false
}

// linkedRule names the protection of a file in a read-write tree that is
// also a file inside a protected directory (a hard link): it is that
// file, so it is protected as that file is. A protected regular file with
// another name is refused (the sandbox's init says so), and so is a call
// while this one exists: remove the extra link. A shell makes a nested
// protected directory (sub/.git, sub/.vscode) in one session, which the
// next holds read-only whole; a link it made from a plain name to a file
// in it would write that file from then on.
const linkedRule = "a hard link to a file in a protected directory"

// exists reports whether p names anything, without following a symlink.
func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// ProtectedTable returns the protected-path table, in order.
func ProtectedTable() []ProtectedEntry { return slices.Clone(protectedTable) }

// ProtectedNames lists every name paths.writable_protected accepts.
func ProtectedNames() []string {
	out := make([]string, len(protectedTable))
	for i, e := range protectedTable {
		out[i] = e.Name
	}
	return out
}

func isAnywhereName(c string) bool {
	return slices.ContainsFunc(protectedTable, func(e ProtectedEntry) bool { return e.Where == "anywhere" && e.Name == c })
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
			case len(rel) >= 2 && (slices.Contains(gitConfigNames, rel[1]) || rel[1] == "worktrees"):
				return ".git/config"
			case len(rel) >= 2 && rel[1] == "modules":
				return ".git/modules"
			}
		case c == ".git":
			return ".git"
		case isAnywhereName(c):
			return c
		case i == 0 && len(rel) >= 2:
			if two := c + "/" + rel[1]; slices.ContainsFunc(protectedTable, func(e ProtectedEntry) bool { return e.Where == "home" && e.Name == two }) {
				return two
			}
		}
	}
	return ""
}

// protectedPath is one protected path of a read-write tree.
type protectedPath struct {
	path string // absolute; resolved up to the path itself
	name string // its entry in ProtectedNames
	dir  bool   // held as a directory when missing
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

// looksLikeHome reports whether the directory r is a home directory: /root,
// a directory directly in /home, or one holding a login shell's files.
func looksLikeHome(r string) bool {
	if r == "/root" || filepath.Dir(r) == "/home" {
		return true
	}
	for _, n := range []string{".profile", ".bashrc", ".ssh"} {
		if _, err := os.Lstat(filepath.Join(r, n)); err == nil {
			return true
		}
	}
	return false
}

// protectedPaths lists the protected paths of a read-write directory root r
// (resolved: no symlink among its components):
// those at its top (existing or not), the home entries (existing, or every
// one in a home directory) and nested ones found by a bounded scan that
// does not follow symlinks. It reports whether the scan was complete.
// Nested read-write roots (others) are left to their own scan.
func protectedPaths(r string, writable map[string]bool, others []string, gl *gitGlobals) ([]protectedPath, bool) {
	if gl == nil {
		gl = readGitGlobals()
	}
	var out []protectedPath
	// What the tree's configuration files name is read within bounds
	// (configReader): a sandbox may have written every one of them.
	cr := newConfigReader(gl.home)
	add := func(p, rule string, dir bool) {
		if writable[rule] {
			return
		}
		out = append(out, protectedPath{path: p, name: rule, dir: dir})
		// A protected path that is a symlink protects its target too, so
		// writing the target directly is refused as well. r is resolved,
		// so a name directly in it that is missing or no symlink resolves
		// to itself: one lstat instead of one per component from /.
		if filepath.Dir(p) == r {
			if fi, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) || err == nil && fi.Mode()&fs.ModeSymlink == 0 {
				return
			}
		}
		if res, err := resolve(p); err == nil && res.path != p && inWritableTree(res.path, r, others) {
			out = append(out, protectedPath{path: res.path, name: rule, dir: dir})
		}
	}
	gitDir := filepath.Join(r, ".git")
	rootIsGit := filepath.Base(r) == ".git"
	if rootIsGit {
		gitDir = r
	}
	// Only a repository has its parts protected: a .git directory with a
	// HEAD (as git itself requires) that is not one of airlock's
	// placeholders (another call's, or one a dead broker left until the
	// next start removes it, unmarked where the file system has no user
	// extended attributes). Anything else is held whole, as a missing .git
	// is: taken for a repository, only its parts would be protected, and a
	// hold that found it gone would make .git again as their parent.
	repo := gitRepository(gitDir)
	// Where .git is a file, the directory it names (gitdir: PATH).
	named, isFile := "", false
	if !repo && !rootIsGit {
		named, isFile = gitFileDir(gitDir)
	}
	// addConfig protects what configures the repository whose git
	// directory is dir and what runs its hooks.
	addConfig := func(dir string) {
		add(filepath.Join(dir, "hooks"), ".git/hooks", true)
		for _, n := range gitConfigNames {
			add(filepath.Join(dir, n), ".git/config", false)
		}
	}
	if isFile && within(named, r) && named != r {
		// A .git file naming a directory inside the tree (git init
		// --separate-git-dir): the file is held whole, and the repository
		// it names has its parts protected as a .git's are; one that is
		// not a repository (yet) is held whole, so that none can be
		// planted where the file points.
		add(gitDir, ".git", true)
		if !gitRepository(named) {
			add(named, ".git", true)
		} else {
			gitDir, repo = named, true
		}
	} else if !repo && !rootIsGit && gitRepository(r) {
		// No .git, but a HEAD at the top: a bare repository (git takes a
		// directory with a HEAD, objects and refs, or a HEAD and a
		// commondir, for one when it finds no .git in it), or one a
		// sandbox could complete. Its own hooks and configuration are
		// protected as a .git's are, and a .git in it is held whole, since
		// git looks for that first.
		add(gitDir, ".git", true)
		gitDir, repo, rootIsGit = r, true, true
	}
	if repo {
		addConfig(gitDir)
		add(filepath.Join(gitDir, "modules"), ".git/modules", true)
		// Linked worktrees' administrative directories: each one's
		// commondir and config.worktree configure git in that worktree,
		// which may be outside every grant. Held when it exists; a
		// missing one has no worktree pointing into it.
		if wt := filepath.Join(gitDir, "worktrees"); exists(wt) {
			add(wt, ".git/config", true)
		}
		if gitDir != r && !rootIsGit {
			// The top's own HEAD is held too: a sandbox that spoils
			// .git/HEAD (writable, so commits and checkouts work) makes
			// git look at the top itself as a bare repository, so none
			// may be planted there either. A HEAD there already that git
			// would take has what would configure that repository
			// protected.
			add(filepath.Join(r, "HEAD"), ".git", false)
			if gitRepository(r) {
				addConfig(r)
			}
		}
	} else {
		// A .git file, a symlink, or none: the whole name is held.
		add(gitDir, ".git", true)
		if !rootIsGit {
			// And so is a HEAD, without which git takes no directory for a
			// bare repository: a sandbox cannot plant one at the top
			// (config, hooks, objects, refs and a HEAD) for host git to
			// find where the tree has no .git.
			add(filepath.Join(r, "HEAD"), ".git", false)
		}
	}
	// The git directory whose configuration holds for the top of the tree:
	// the repository's own, or, where .git is a file naming one outside
	// the tree (a linked worktree, a submodule), that one, read only for
	// what its configuration names inside the tree.
	repos := []gitRepo{}
	if repo {
		repos = append(repos, gitRepo{gitDir: gitDir, top: r})
	} else if isFile && gitRepository(named) {
		repos = append(repos, gitRepo{gitDir: named, top: r})
	}
	home := looksLikeHome(r)
	above := homesAbove(r)
	for _, e := range protectedTable {
		switch e.Where {
		case "anywhere":
			p := filepath.Join(r, e.Name)
			if confs, ok := vcsConfig[e.Name]; ok && isDir(p) {
				for _, c := range confs {
					add(filepath.Join(p, filepath.FromSlash(c)), e.Name, false)
				}
				if e.Name == ".hg" {
					for _, inc := range cr.hgIncludes(p) {
						if res, err := resolve(inc); err == nil && within(res.path, r) && res.path != r {
							add(res.path, e.Name, false)
						}
					}
				}
				continue
			}
			add(p, e.Name, e.Dir)
		case "home":
			p := filepath.Join(r, filepath.FromSlash(e.Name))
			if _, err := os.Lstat(p); home || err == nil {
				add(p, e.Name, e.Dir)
			}
			// A tree inside a home directory (~/.config, ~/.local) holds
			// the entries named from the home directory's top.
			for _, h := range above {
				if p := filepath.Join(h, filepath.FromSlash(e.Name)); within(p, r) && p != r {
					add(p, e.Name, e.Dir)
				}
			}
		}
	}
	// The scan may list a directory's entries in any order; the names it
	// finds are added in the order of a walk in name order, as before.
	type find struct {
		p, name string
		dir     bool
	}
	var finds []find
	scanSkip := others
	if gitDir != r && gitDir != filepath.Join(r, ".git") {
		// A separate git directory in the tree has its parts protected
		// above; held whole by the scan, it would take commits away.
		scanSkip = append(slices.Clip(others), gitDir)
	}
	var linked []string // regular files with another name (protectInside)
	complete := scanNested(r, rootIsGit, scanSkip, func(p, name string, dir bool) {
		if name == linkedRule {
			linked = append(linked, p)
			return
		}
		finds = append(finds, find{p, name, dir})
	})
	slices.SortStableFunc(finds, func(a, b find) int { return compareWalkOrder(a.p, b.p) })
	for _, f := range finds {
		add(f.p, f.name, f.dir)
		// A nested repository is read-only whole, but what its
		// configuration names in the tree (a hooks directory, an
		// included file) is not in it.
		switch {
		case f.name == ".git" && f.dir:
			top := f.p
			if filepath.Base(f.p) == ".git" {
				top = filepath.Dir(f.p)
			}
			repos = append(repos, gitRepo{gitDir: f.p, top: top})
		case f.name == ".git":
			// A .git file: a linked worktree's or a submodule's, whose
			// configuration is that of the repository it names.
			if d, ok := gitFileDir(f.p); ok && gitRepository(d) {
				repos = append(repos, gitRepo{gitDir: d, top: filepath.Dir(f.p)})
			}
		}
	}
	protectGitConfigRefs(r, repos, gl, cr, add)
	complete = protectInside(r, others, slices.Clone(out), linked, add) && complete
	return out, complete && !cr.short && !gl.short
}

// gitRepo is a repository whose configuration protectGitConfigRefs reads:
// its git directory and the top of its work tree, where its hooks run.
type gitRepo struct{ gitDir, top string }

// protectGitConfigRefs protects what git's configuration names inside the
// read-write tree r: the user's configuration files themselves where they
// lie in it (GIT_CONFIG_GLOBAL, XDG_CONFIG_HOME), the files any of them or
// a repository's configuration includes (a sandbox writing one would write
// git's configuration), the hooks directory core.hooksPath names and the
// template directory init.templateDir names (whose hooks git copies into
// every new repository), for the user's configuration and for each
// repository of repos (a relative one is relative to the top of the
// repository's work tree, where hooks run), and the files the commands
// and programs of gitProgramKeys name (programPath). A hooks directory
// named "_" is husky's, whose scripts run the hooks in the directory above
// it, so that one is protected. What it looks at is bounded by cr.
func protectGitConfigRefs(r string, repos []gitRepo, gl *gitGlobals, cr *configReader, add func(p, rule string, dir bool)) {
	inTree := func(p string) (string, bool) {
		res, err := resolve(p)
		if err != nil || !within(res.path, r) || res.path == r {
			return "", false
		}
		return res.path, true
	}
	dirs := func(hp, top string, template bool) {
		if !filepath.IsAbs(hp) {
			if top == "" {
				return
			}
			hp = filepath.Join(top, hp)
		}
		p, ok := inTree(hp)
		if !ok {
			return
		}
		if !template && filepath.Base(p) == "_" && filepath.Dir(p) != r {
			p = filepath.Dir(p)
		}
		add(p, ".git/hooks", true)
	}
	// held records the paths programs has looked at, and whether one that
	// is missing was held.
	held := map[string]bool{}
	programs := func(cmds [][]string, top string) {
		for _, words := range cmds {
			for i, w := range words {
				p, hold := programPath(w, i == 0, gl.home, top)
				if h, done := held[p]; p == "" || done && (h || !hold) {
					continue
				}
				held[p] = hold
				if !cr.take(1) {
					return
				}
				res, err := resolve(p)
				switch {
				case err != nil || !within(res.path, r) || res.path == r:
				case res.missing > 0:
					if hold {
						add(res.path, ".git/config", false)
					}
				default:
					// A directory is no program (a command's "cd src"
					// leaves src writable).
					if fi, err := os.Lstat(res.path); err == nil && !fi.IsDir() {
						add(res.path, ".git/config", false)
					}
				}
			}
		}
	}
	for _, f := range gl.files {
		if p, ok := inTree(f); ok {
			add(p, ".gitconfig", false)
		}
	}
	for _, inc := range gl.refs.includes {
		if p, ok := inTree(inc); ok {
			add(p, ".git/config", false)
		}
	}
	for _, list := range []struct {
		dirs     []string
		template bool
	}{{gl.refs.hooksPaths, false}, {gl.refs.templateDirs, true}} {
		for _, hp := range list.dirs {
			dirs(hp, "", list.template)
			for _, repo := range repos {
				dirs(hp, repo.top, list.template)
			}
		}
	}
	programs(gl.refs.commands, "")
	for _, repo := range repos {
		var refs gitConfigRefs
		cr.walk('g', cr.repoConfigFiles(repo.gitDir), &refs)
		for _, inc := range refs.includes {
			if p, ok := inTree(inc); ok {
				add(p, ".git/config", false)
			}
		}
		for _, hp := range refs.hooksPaths {
			dirs(hp, repo.top, false)
		}
		for _, td := range refs.templateDirs {
			dirs(td, repo.top, true)
		}
		programs(refs.commands, repo.top)
	}
}

// programPath returns the path a word of a command or program value in
// git's configuration names (commandWords), and whether it is held while
// missing: an absolute one, or one in the home directory ("~/", "$HOME/"),
// held; for a repository's own configuration (top is the top of its work
// tree, where git runs commands), a relative one, held where it is the
// program itself (the first word) with a slash in it or starts with "./"
// or "../", and otherwise only protected where it exists (so "git log
// origin/main" holds no origin/main). It returns "" for a word that is no
// path: an option, a URL, another variable, or a relative word of the
// user's configuration, which holds wherever git runs.
func programPath(w string, first bool, home, top string) (string, bool) {
	if strings.HasPrefix(w, "-") || strings.Contains(w, "://") {
		return "", false
	}
	for _, pre := range []string{"~/", "$HOME/", "${HOME}/"} {
		if rest, ok := strings.CutPrefix(w, pre); ok {
			if home == "" {
				return "", false
			}
			return filepath.Join(home, rest), true
		}
	}
	switch {
	case filepath.IsAbs(w):
		return filepath.Clean(w), true
	case top == "" || strings.HasPrefix(w, "$") || strings.HasPrefix(w, "~"):
		return "", false
	}
	hold := first && strings.Contains(w, "/") || strings.HasPrefix(w, "./") || strings.HasPrefix(w, "../")
	return filepath.Join(top, w), hold
}

// repoConfigFiles returns the configuration files of the repository whose
// git directory is gitDir: config in its common directory (commondir, for
// a linked worktree's administrative directory) and its own
// config.worktree.
func (c *configReader) repoConfigFiles(gitDir string) []string {
	common := gitDir
	if f := c.file('c', filepath.Join(gitDir, "commondir")); f != nil && len(f.includes) == 1 {
		common = f.includes[0]
	}
	return []string{filepath.Join(common, "config"), filepath.Join(gitDir, "config.worktree")}
}

// compareWalkOrder compares two paths in the order a walk that lists each
// directory in name order visits them: component by component, so "a/b"
// comes before "a.b" (a plain string comparison puts '.' before '/').
func compareWalkOrder(a, b string) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		ca, cb := a[i], b[i]
		if ca == cb {
			continue
		}
		if ca == '/' {
			return -1
		}
		if cb == '/' {
			return 1
		}
		return int(ca) - int(cb)
	}
	return len(a) - len(b)
}
