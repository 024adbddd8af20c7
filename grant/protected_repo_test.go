package grant

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// mkTree makes the entries of spec below r: a name ending in "/" is a
// directory, "name -> target" a symlink, anything else an empty file.
func mkTree(t *testing.T, r string, spec ...string) {
	t.Helper()
	for _, e := range spec {
		p := filepath.Join(r, strings.TrimSuffix(e, "/"))
		name, target, link := strings.Cut(e, " -> ")
		if link {
			p = filepath.Join(r, name)
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch {
		case link:
			err = os.Symlink(target, p)
		case strings.HasSuffix(e, "/"):
			err = os.MkdirAll(p, 0o755)
		default:
			err = os.WriteFile(p, []byte("ref: refs/heads/main\n"), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// protectedRel runs protectedPaths on r and returns each path relative to
// r with its rule and kind, as "rel rule dir|file".
func protectedRel(t *testing.T, r string) []string {
	t.Helper()
	list, complete := protectedPaths(r, nil, []string{r}, nil)
	if !complete {
		t.Fatalf("the scan of %s was not complete", r)
	}
	var out []string
	for _, p := range list {
		rel, err := filepath.Rel(r, p.path)
		if err != nil {
			t.Fatal(err)
		}
		kind := "file"
		if p.dir {
			kind = "dir"
		}
		out = append(out, rel+" "+p.name+" "+kind)
	}
	return out
}

// TestRepositoriesProtected checks what git takes for a repository, which a
// sandbox must neither plant at the top of a tree nor change the
// configuration of: a .git, a bare repository at the top, and nested
// repositories by any name (bare ones, and linked worktrees'
// administrative directories, which have a HEAD and a commondir).
func TestRepositoriesProtected(t *testing.T) {
	tests := []struct {
		name      string
		spec      []string
		want, not []string
	}{{
		name: "plain directory: .git and HEAD held",
		spec: []string{"src/main.go"},
		want: []string{".git .git dir", "HEAD .git file"},
		not:  []string{"hooks .git/hooks dir", "config .git/config file"},
	}, {
		name: "repository: its parts, its linked worktrees' directories, and the top's HEAD",
		spec: []string{".git/HEAD", ".git/objects/", ".git/refs/", ".git/worktrees/wt/HEAD", ".git/worktrees/wt/commondir"},
		want: []string{".git/hooks .git/hooks dir", ".git/config .git/config file", ".git/commondir .git/config file",
			".git/config.worktree .git/config file", ".git/modules .git/modules dir", ".git/worktrees .git/config dir", "HEAD .git file"},
		not: []string{".git .git dir", "hooks .git/hooks dir"},
	}, {
		name: "repository without linked worktrees: no worktrees directory held",
		spec: []string{".git/HEAD", ".git/objects/", ".git/refs/"},
		want: []string{".git/hooks .git/hooks dir", "HEAD .git file"},
		not:  []string{".git/worktrees .git/config dir"},
	}, {
		name: "bare repository at the top",
		spec: []string{"HEAD", "objects/", "refs/heads/", "config", "hooks/pre-receive"},
		want: []string{".git .git dir", "hooks .git/hooks dir", "config .git/config file", "commondir .git/config file",
			"config.worktree .git/config file", "modules .git/modules dir"},
		not: []string{"HEAD .git file"},
	}, {
		name: "a HEAD at the top with nothing else: treated as a repository git could be given",
		spec: []string{"HEAD"},
		want: []string{".git .git dir", "hooks .git/hooks dir", "config .git/config file"},
	}, {
		name: "nested repositories by any name",
		spec: []string{"vendor/mirror.git/HEAD", "vendor/mirror.git/objects/", "vendor/mirror.git/refs/",
			"deep/a/b/wtadmin/HEAD", "deep/a/b/wtadmin/commondir",
			"links/HEAD", "links/objects -> /tmp", "links/refs -> /tmp",
			"logs/HEAD", "logs/refs/heads/", "noHEAD/objects/", "noHEAD/refs/"},
		want: []string{"vendor/mirror.git .git dir", "deep/a/b/wtadmin .git dir", "links .git dir"},
		not:  []string{"logs .git dir", "noHEAD .git dir"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			mkTree(t, r, tt.spec...)
			got := protectedRel(t, r)
			checkProtected(t, got, tt.want, tt.not)
			// The two scans agree on every tree here.
			for _, rootIsGit := range []bool{false, true} {
				fast := runScan(scanNested, r, rootIsGit, []string{r})
				walk := runScan(walkNested, r, rootIsGit, []string{r})
				if !slices.Equal(fast.Found, walk.Found) || fast.Complete != walk.Complete {
					t.Errorf("rootIsGit=%v: scanNested %v, walkNested %v", rootIsGit, fast, walk)
				}
			}
		})
	}
}

// TestWorktreesRuleRefusesWrites checks the tools' own refusal of a write
// into a linked worktree's administrative directory.
func TestWorktreesRuleRefusesWrites(t *testing.T) {
	for _, rel := range [][]string{{".git", "worktrees"}, {".git", "worktrees", "wt", "commondir"}, {".git", "worktrees", "wt", "config.worktree"}} {
		if got := protectedRule(rel, true); got != ".git/config" {
			t.Errorf("protectedRule(%q) = %q, want %q", rel, got, ".git/config")
		}
	}
}

// TestGitConfigRefsProtected checks that what git's configuration names
// inside a read-write tree is protected: core.hooksPath's directory (held
// when missing; husky's "_" protects the directory above it) and every file
// the repository's or the user's configuration includes.
func TestGitConfigRefsProtected(t *testing.T) {
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("GIT_CONFIG_GLOBAL", "")
	tests := []struct {
		name      string
		config    string // the repository's .git/config
		global    string // ~/.gitconfig
		want, not []string
	}{{
		name:   "relative hooksPath, held while missing",
		config: "[core]\n\trepositoryformatversion = 0\n\thooksPath = .githooks\n",
		want:   []string{".githooks .git/hooks dir"},
	}, {
		name:   "husky",
		config: "[core] hooksPath = \".husky/_\" ; husky\n",
		want:   []string{".husky .git/hooks dir"},
		not:    []string{".husky/_ .git/hooks dir"},
	}, {
		name:   "absolute hooksPath inside the tree, the last one counting too",
		config: "[Core]\n\tHooksPath = /elsewhere\n[core]\n\thookspath = TREE/tools/hooks # comment\n",
		want:   []string{"tools/hooks .git/hooks dir"},
	}, {
		name:   "includes, relative to the including file",
		config: "[include]\n\tpath = ../shared.inc\n[includeIf \"gitdir:~/\"]\n\tpath = TREE/more/conf.inc\n",
		want:   []string{"shared.inc .git/config file", "more/conf.inc .git/config file"},
	}, {
		name:   "the user's configuration: an include and a hooksPath in the tree",
		global: "[include]\n\tpath = TREE/dotfiles/git.inc\n[core]\n\thooksPath = TREE/hooks2\n",
		want:   []string{"dotfiles/git.inc .git/config file", "hooks2 .git/hooks dir"},
	}, {
		name:   "a byte-order mark and a continued line",
		config: "\ufeff[include]\n\tpath = ../in\\\nc.cfg\n",
		want:   []string{"inc.cfg .git/config file"},
	}, {
		name:   "the user's absolute hooksPath in a tree that is no repository's top",
		global: "[core]\n\thooksPath = TREE/more/hooks\n",
		want:   []string{"more/hooks .git/hooks dir"},
	}, {
		name:   "hooksPath outside the tree or the tree itself: nothing",
		config: "[core]\n\thooksPath = /usr/share/hooks\n[core]\n\thooksPath = .\n",
		not:    []string{". .git/hooks dir"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			mkTree(t, r, ".git/HEAD", ".git/objects/", ".git/refs/", "more/", "dotfiles/")
			for p, c := range map[string]string{filepath.Join(r, ".git", "config"): tt.config, filepath.Join(home, ".gitconfig"): tt.global} {
				if err := os.WriteFile(p, []byte(strings.ReplaceAll(c, "TREE", r)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got := protectedRel(t, r)
			checkProtected(t, got, tt.want, tt.not)
		})
	}
}

func TestGitValue(t *testing.T) {
	for in, want := range map[string]string{
		" x ":                 "x",
		` "a b" # c`:          "a b",
		` "a;b" ; c`:          "a;b",
		` a\"b`:               `a"b`,
		` "C:\\hooks"`:        `C:\hooks`,
		"":                    "",
		` x # "not a quote"`:  "x",
		` "unterminated # x`:  "unterminated # x",
		` ~/hooks ;comment`:   "~/hooks",
		` a\tb`:               "a\tb",
		` "x"y"z"`:            "xyz",
		` plain#nospace`:      "plain",
		` .husky/_`:           ".husky/_",
		`   "  spaced  "   `:  "  spaced  ",
		` trailing\`:          `trailing\`,
		` semi;colon`:         "semi",
		` "hash#inside" tail`: "hash#inside tail",
	} {
		if got := gitValue(in); got != want {
			t.Errorf("gitValue(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSeparateGitDirProtected checks a .git file naming a repository inside
// the tree (git init --separate-git-dir): the file is held whole and the
// repository's parts are protected; one naming a repository outside the
// tree, or nothing, leaves the tree a plain one.
func TestSeparateGitDirProtected(t *testing.T) {
	for _, tt := range []struct {
		name, gitFile string
		want, not     []string
	}{
		{"inside, relative", "gitdir: .repo\n", []string{".git .git dir", ".repo/hooks .git/hooks dir", ".repo/config .git/config file", ".repo/commondir .git/config file", "HEAD .git file"}, []string{".repo .git dir"}},
		{"inside, absolute", "gitdir: TREE/.repo\r\n", []string{".repo/hooks .git/hooks dir"}, nil},
		{"inside, missing", "gitdir: inner/g\n", []string{".git .git dir", "inner/g .git dir"}, []string{"inner/g/hooks .git/hooks dir"}},
		{"inside, not a repository", "gitdir: src\n", []string{".git .git dir", "src .git dir"}, []string{"src/hooks .git/hooks dir"}},
		{"outside", "gitdir: /nonexistent/x\n", []string{".git .git dir", "HEAD .git file"}, []string{".repo/hooks .git/hooks dir"}},
		{"not a gitdir line", "junk\n", []string{".git .git dir", "HEAD .git file"}, []string{".repo/hooks .git/hooks dir"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			mkTree(t, r, ".repo/HEAD", ".repo/objects/", ".repo/refs/", "src/main.go")
			if err := os.WriteFile(filepath.Join(r, ".git"), []byte(strings.ReplaceAll(tt.gitFile, "TREE", r)), 0o644); err != nil {
				t.Fatal(err)
			}
			got := protectedRel(t, r)
			checkProtected(t, got, tt.want, tt.not)
		})
	}
}

// TestOtherVCSProtected checks Mercurial and Jujutsu repositories: held as
// files where missing, only their configuration read-only at the top of a
// tree that is one, and read-only whole when nested.
func TestOtherVCSProtected(t *testing.T) {
	r, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mkTree(t, r, ".hg/store/", "sub/.jj/repo/", "sub2/.hg/", "conf/project.hgrc")
	if err := os.WriteFile(filepath.Join(r, ".hg", "hgrc"), []byte("[ui]\n%include ../conf/project.hgrc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := protectedRel(t, r)
	checkProtected(t, got, []string{".hg/hgrc .hg file", ".hg/sharedpath .hg file", "conf/project.hgrc .hg file", ".jj .jj file", "sub/.jj .jj dir", "sub2/.hg .hg dir"}, nil)
	if slices.Contains(got, ".hg .hg file") || slices.Contains(got, ".hg .hg dir") {
		t.Errorf("the top Mercurial repository is protected whole:\n%s", strings.Join(got, "\n"))
	}
}

// TestSetIDFilesProtected checks that set-user-ID and set-group-ID regular
// files anywhere in a read-write tree are read-only, whatever their name,
// and that a plain executable is not.
func TestSetIDFilesProtected(t *testing.T) {
	r, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mkTree(t, r, "top-suid", "bin/sub/deep-sgid", "bin/plain", ".bashrc")
	for p, m := range map[string]os.FileMode{"top-suid": 0o4755, "bin/sub/deep-sgid": 0o2755, "bin/plain": 0o755, ".bashrc": 0o4644} {
		if err := os.Chmod(filepath.Join(r, p), m&0o777|map[bool]os.FileMode{true: os.ModeSetuid}[m&0o4000 != 0]|map[bool]os.FileMode{true: os.ModeSetgid}[m&0o2000 != 0]); err != nil {
			t.Fatal(err)
		}
	}
	got := protectedRel(t, r)
	checkProtected(t, got, []string{"top-suid " + setIDRule + " file", "bin/sub/deep-sgid " + setIDRule + " file", ".bashrc .bashrc file"}, nil)
	for _, p := range got {
		if strings.HasPrefix(p, "bin/plain ") {
			t.Errorf("a plain executable is protected: %q", p)
		}
	}
}

// TestUnscannedSetIDRisk: a set-ID file past the scan's bound (a
// root-owned 4755 file behind 20,000 others) is not found, so it is not
// read-only; the grant says so as a risk naming the tree and what is not
// checked there, for sessions to record and front ends to warn of.
func TestUnscannedSetIDRisk(t *testing.T) {
	r, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mkTree(t, r, "aa/", "zz/helper")
	for i := range maxProtectedScan + 1 {
		if err := os.WriteFile(filepath.Join(r, "aa", fmt.Sprint(i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(r, "zz", "helper"), 0o755|os.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	g, err := FromFlags(r, Flags{})
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(g.Protected(), filepath.Join(r, "zz", "helper")) {
		t.Fatalf("the set-ID file past the bound was found; the test needs a tree the scan does not finish")
	}
	const consequence = "files past the first 20,000 entries are not checked for protected names or set-ID bits"
	risky := func(rs []string) bool {
		return slices.ContainsFunc(rs, func(s string) bool {
			return strings.Contains(s, consequence) && strings.Contains(s, fmt.Sprintf("%q", r))
		})
	}
	if !risky(g.Risks()) {
		t.Errorf("Risks() = %q, want one naming %s and saying %q", g.Risks(), r, consequence)
	}
	if got := g.ScanRisks(); len(got) != 1 || !risky(got) {
		t.Errorf("ScanRisks() = %q, want the one risk of the tree", got)
	}
	// A tree the scan sees whole has none.
	small, err := FromFlags(filepath.Join(r, "zz"), Flags{})
	if err != nil {
		t.Fatal(err)
	}
	if got := small.ScanRisks(); len(got) != 0 {
		t.Errorf("a small tree: ScanRisks() = %q, want none", got)
	}
}

// TestHomeSplit checks how a home directory granted read-write is mounted:
// its top read-only, its existing entries without a leading dot read-write,
// and a write at its top refused with a sentence that says why.
func TestHomeSplit(t *testing.T) {
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mkTree(t, home, "proj/", "bin/", "repo/.git/HEAD", "notes.txt", ".bashrc", ".config/", "link -> proj")
	t.Setenv("HOME", home)
	g, err := FromFlags(home, Flags{})
	if err != nil {
		t.Fatal(err)
	}
	want := []Mount{{Source: home, Dir: true}, {Source: filepath.Join(home, "proj"), Writable: true, Dir: true}, {Source: filepath.Join(home, "repo"), Writable: true, Dir: true}}
	got := g.Mounts()
	slices.SortFunc(got, func(a, b Mount) int { return strings.Compare(a.Source, b.Source) })
	slices.SortFunc(want, func(a, b Mount) int { return strings.Compare(a.Source, b.Source) })
	if !slices.Equal(got, want) {
		t.Errorf("mounts:\n got %v\nwant %v", got, want)
	}
	for _, p := range []string{".bash_aliases", "newfile", ".config/x", "notes.txt", "bin/ls"} {
		d := g.CheckPath(filepath.Join(home, p), true)
		if d.Allowed || !strings.Contains(d.Reason, "top of the home directory") {
			t.Errorf("writing %s: %+v, want a refusal naming the home directory's top", p, d)
		}
	}
	if d := g.CheckPath(filepath.Join(home, "proj", "x.go"), true); !d.Allowed {
		t.Errorf("writing proj/x.go: %+v", d)
	}
	// The home directory's directories hold no placeholders at their tops,
	// but an existing repository's missing hooks are held.
	for _, p := range g.Protected() {
		if filepath.Dir(p) == filepath.Join(home, "proj") {
			if _, err := os.Lstat(p); err != nil {
				t.Errorf("a missing name at the top of a home directory's directory is held: %s", p)
			}
		}
	}
	if !slices.Contains(g.Protected(), filepath.Join(home, "repo", ".git", "hooks")) {
		t.Errorf("a repository in the home directory has its missing hooks unheld: %v", g.Protected())
	}
	// A parent of the home directory granted read-write: the home
	// directory inside it gets the same read-only top.
	parent := filepath.Dir(home)
	g, err = FromFlags(parent, Flags{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{".bash_aliases", ".config/x", "bin/ls"} {
		if d := g.CheckPath(filepath.Join(home, p), true); d.Allowed || !strings.Contains(d.Reason, "top of the home directory") {
			t.Errorf("through the parent, writing %s: %+v, want a refusal naming the home directory's top", p, d)
		}
	}
	if d := g.CheckPath(filepath.Join(home, "proj", "x.go"), true); !d.Allowed {
		t.Errorf("through the parent, writing proj/x.go: %+v", d)
	}
	if d := g.CheckPath(filepath.Join(parent, "elsewhere.txt"), true); !d.Allowed {
		t.Errorf("writing next to the home directory: %+v", d)
	}
	// A directory that is not a home directory is granted whole.
	other, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	g, err = FromFlags(other, Flags{})
	if err != nil {
		t.Fatal(err)
	}
	if got := g.Mounts(); len(got) != 1 || !got[0].Writable {
		t.Errorf("a plain directory: mounts %v", got)
	}
}

// TestRememberKeepsTheGrantsOwnRule: a recorded path the grant protects
// itself keeps the grant's rule (here: held as a directory when missing),
// whatever the record says, and is protected once.
func TestRememberKeepsTheGrantsOwnRule(t *testing.T) {
	r, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	g, err := FromFlags(r, Flags{})
	if err != nil {
		t.Fatal(err)
	}
	vscode := filepath.Join(r, ".vscode")
	if !slices.Contains(g.ProtectedDirs(), vscode) {
		t.Fatalf("the grant does not hold %s as a directory: %v", vscode, g.ProtectedDirs())
	}
	got := g.Remember([]ProtectedPath{{Path: vscode, Name: ".vscode", Dir: false}})
	if !slices.Contains(got.ProtectedDirs(), vscode) {
		t.Errorf("after Remember, %s is no longer held as a directory: %v", vscode, got.ProtectedDirs())
	}
	if n := len(got.Protected()); n != len(g.Protected()) {
		t.Errorf("Remember of a path the grant protects changed the list from %d to %d paths", len(g.Protected()), n)
	}
}

// TestRemember checks which recorded protected paths a later grant keeps:
// those that still exist inside one of its read-write trees as they were,
// and no other.
func TestRemember(t *testing.T) {
	r, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	outside, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mkTree(t, r, "vendor/lib/.git/HEAD", "sub/.vscode/", "plain/", "gone/", "tool", "link -> vendor")
	g, err := FromFlags(r, Flags{})
	if err != nil {
		t.Fatal(err)
	}
	recorded := g.NestedProtected(r)
	if !slices.ContainsFunc(recorded, func(p ProtectedPath) bool { return p.Path == filepath.Join(r, "vendor/lib/.git") }) {
		t.Fatalf("NestedProtected lacks the nested repository: %v", recorded)
	}
	if err := os.Chmod(filepath.Join(r, "tool"), 0o755|os.ModeSetuid); err != nil {
		t.Fatal(err)
	}
	recorded = append(recorded,
		ProtectedPath{Path: filepath.Join(r, "plain"), Name: ".git"},                 // kept: exists, a protected name
		ProtectedPath{Path: filepath.Join(r, "tool"), Name: setIDRule},               // kept: still set-ID
		ProtectedPath{Path: filepath.Join(r, "gone", "x"), Name: ".git"},             // missing
		ProtectedPath{Path: filepath.Join(r, "link", "lib"), Name: ".git"},           // through a symlink
		ProtectedPath{Path: filepath.Join(outside), Name: ".git"},                    // outside the tree
		ProtectedPath{Path: r, Name: ".git"},                                         // the tree itself
		ProtectedPath{Path: filepath.Join(r, "sub"), Name: "not-a-rule"},             // unknown rule
		ProtectedPath{Path: filepath.Join(r, "sub", "..", "plain"), Name: ".vscode"}, // not clean
	)
	got := g.Remember(recorded).Protected()
	for _, w := range []string{"vendor/lib/.git", "plain", "tool", "sub/.vscode"} {
		if !slices.Contains(got, filepath.Join(r, w)) {
			t.Errorf("want %s protected: %v", w, got)
		}
	}
	for _, n := range []string{filepath.Join(r, "gone", "x"), filepath.Join(r, "link", "lib"), outside, r, filepath.Join(r, "sub")} {
		if slices.Contains(got, n) {
			t.Errorf("%s is protected, want not", n)
		}
	}
	// A file no longer set-ID is forgotten.
	if err := os.Chmod(filepath.Join(r, "tool"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := g.Remember(recorded).Protected(); slices.Contains(got, filepath.Join(r, "tool")) {
		t.Errorf("a file no longer set-ID is still protected")
	}
}

// TestGitConfigRefsBeyondTheTop checks what git's configuration names in a
// tree for repositories other than the tree's own: a nested repository's
// hooks directory and included file, a linked worktree's (whose
// configuration is its main repository's, outside the tree), the user's
// configuration file itself where GIT_CONFIG_GLOBAL puts it in the tree,
// and a system configuration named by GIT_CONFIG_SYSTEM.
func TestGitConfigRefsBeyondTheTop(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", filepath.Join(base, "home"))
	t.Setenv("XDG_CONFIG_HOME", "")
	r := filepath.Join(base, "tree")
	mkTree(t, r, "app/.git/HEAD", "app/.git/objects/", "app/.git/refs/", "cfg/")
	write := func(p, c string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.ReplaceAll(c, "TREE", r)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(r, "app", ".git", "config"), "[core]\n\thooksPath = .githooks\n[include]\n\tpath = ../.shared.inc\n")
	write(filepath.Join(r, "cfg", "global.gitconfig"), "[user]\n\tname = u\n")
	write(filepath.Join(base, "system.gitconfig"), "[include]\n\tpath = TREE/sys.inc\n")
	t.Setenv("GIT_CONFIG_GLOBAL", filepath.Join(r, "cfg", "global.gitconfig"))
	t.Setenv("GIT_CONFIG_SYSTEM", filepath.Join(base, "system.gitconfig"))
	got := protectedRel(t, r)
	checkProtected(t, got, []string{"app/.githooks .git/hooks dir", "app/.shared.inc .git/config file", "cfg/global.gitconfig .gitconfig file", "sys.inc .git/config file"}, nil)

	// A linked worktree granted alone: its main repository, outside the
	// tree, names a hooks directory relative to the worktree's top.
	main := filepath.Join(base, "main")
	mkTree(t, main, ".git/HEAD", ".git/objects/", ".git/refs/", ".git/worktrees/wt/HEAD")
	write(filepath.Join(main, ".git", "config"), "[core]\n\thooksPath = .githooks\n")
	write(filepath.Join(main, ".git", "worktrees", "wt", "commondir"), "../..\n")
	wt := filepath.Join(base, "wt")
	write(filepath.Join(wt, ".git"), "gitdir: "+filepath.Join(main, ".git", "worktrees", "wt")+"\n")
	t.Setenv("GIT_CONFIG_GLOBAL", "")
	t.Setenv("GIT_CONFIG_SYSTEM", "")
	if got := protectedRel(t, wt); !slices.Contains(got, ".githooks .git/hooks dir") {
		t.Errorf("a linked worktree's hooks directory is not protected:\n%s", strings.Join(got, "\n"))
	}
}

// TestGlobalHooksDirNotWritable checks that the hooks directory the user's
// configuration names can be neither granted read-write nor made writable
// by splitting a home directory.
func TestGlobalHooksDirNotWritable(t *testing.T) {
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("GIT_CONFIG_GLOBAL", "")
	t.Setenv("GIT_CONFIG_SYSTEM", "")
	mkTree(t, home, "githooks/", "proj/")
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[core]\n\thooksPath = ~/githooks\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := FromFlags(filepath.Join(home, "githooks"), Flags{}); err == nil || !strings.Contains(err.Error(), "hooks directory") {
		t.Errorf("granting the hooks directory read-write: %v, want a refusal", err)
	}
	g, err := FromFlags(home, Flags{})
	if err != nil {
		t.Fatal(err)
	}
	if d := g.CheckPath(filepath.Join(home, "githooks", "pre-commit"), true); d.Allowed {
		t.Errorf("the hooks directory is writable in a home directory granted read-write")
	}
	if d := g.CheckPath(filepath.Join(home, "proj", "x"), true); !d.Allowed {
		t.Errorf("proj is not writable: %+v", d)
	}
}

// TestHomeLinksProtected checks a home directory whose start-up files are
// symlinks into a dotfiles directory of it (stow): the files they lead to
// stay read-only, the rest of that directory writable.
func TestHomeLinksProtected(t *testing.T) {
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	mkTree(t, home, "dotfiles/bashrc", "dotfiles/nvim/init.lua", "dotfiles/README", ".config/",
		".bashrc -> dotfiles/bashrc", ".config/nvim -> ../dotfiles/nvim")
	g, err := FromFlags(home, Flags{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"dotfiles/bashrc", "dotfiles/nvim/init.lua"} {
		if d := g.CheckPath(filepath.Join(home, p), true); d.Allowed {
			t.Errorf("%s, which a start-up file links to, is writable", p)
		}
	}
	if d := g.CheckPath(filepath.Join(home, "dotfiles", "README"), true); !d.Allowed {
		t.Errorf("dotfiles/README is not writable: %+v", d)
	}
}

// TestHomeNamedDirsReadOnly checks that directories of a home directory
// that its shell start-up files or PATH name stay read-only when the home
// directory is granted read-write.
func TestHomeNamedDirsReadOnly(t *testing.T) {
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	mkTree(t, home, "miniconda3/bin/conda", "google-cloud-sdk/path.bash.inc", "tools/bin/x", "proj/")
	rc := "__conda_setup=\"$('" + home + "/miniconda3/bin/conda' 'shell.bash' 'hook')\"\n" +
		"if [ -f '${HOME}/google-cloud-sdk/path.bash.inc' ]; then . \"$HOME/google-cloud-sdk/path.bash.inc\"; fi\n"
	if err := os.WriteFile(filepath.Join(home, ".bashrc"), []byte(rc), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", "/usr/bin:/bin:"+filepath.Join(home, "tools", "bin"))
	g, err := FromFlags(home, Flags{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"miniconda3/bin/conda", "google-cloud-sdk/path.bash.inc", "tools/bin/x"} {
		if d := g.CheckPath(filepath.Join(home, p), true); d.Allowed {
			t.Errorf("%s is writable", p)
		}
	}
	if d := g.CheckPath(filepath.Join(home, "proj", "x"), true); !d.Allowed {
		t.Errorf("proj is not writable: %+v", d)
	}
}

// TestLooksLikeHomeSplit checks a home directory that is not this user's
// (a service account's, one a root broker is given): one holding both
// .bashrc and .profile is split like a home directory, a dotfiles
// repository holding them is not.
func TestLooksLikeHomeSplit(t *testing.T) {
	t.Setenv("HOME", "/nonexistent")
	for _, tt := range []struct {
		name  string
		spec  []string
		split bool
	}{
		{"an account's home", []string{".bashrc", ".profile", "proj/"}, true},
		{"one with .ssh", []string{".ssh/", "proj/"}, true},
		{"a dotfiles repository", []string{".bashrc", ".profile", ".git/HEAD", ".git/objects/", ".git/refs/", "proj/"}, false},
		{"only a .bashrc", []string{".bashrc", "proj/"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			mkTree(t, r, tt.spec...)
			g, err := FromFlags(r, Flags{})
			if err != nil {
				t.Fatal(err)
			}
			d := g.CheckPath(filepath.Join(r, "newfile"), true)
			if d.Allowed == tt.split {
				t.Errorf("a new file at the top: %+v, want allowed=%v", d, !tt.split)
			}
		})
	}
}

// TestHomeAndWorktreeGaps covers what the last red-team pass found: a
// linked worktree in the tree (its .git a file) has its hooks directory
// protected; a large cache does not use up the symlink scan of the other
// dot entries; a home directory directly inside a granted directory, one
// with a Fedora skeleton, and one with .ssh that is a repository are split;
// start-up files that name a directory as "$HOME"/x or from .bashrc.d keep
// it read-only.
func TestHomeAndWorktreeGaps(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("GIT_CONFIG_GLOBAL", "")
	t.Setenv("GIT_CONFIG_SYSTEM", "")
	t.Setenv("HOME", "/nonexistent")
	newDir := func() string {
		d, err := filepath.EvalSymlinks(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	write := func(p, c string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	refused := func(g *Grant, p string) {
		t.Helper()
		if d := g.CheckPath(p, true); d.Allowed {
			t.Errorf("%s is writable", p)
		}
	}
	grantOf := func(r string) *Grant {
		t.Helper()
		g, err := FromFlags(r, Flags{})
		if err != nil {
			t.Fatal(err)
		}
		return g
	}

	// A linked worktree next to its main repository, both in the tree.
	r := newDir()
	mkTree(t, r, "app/.git/HEAD", "app/.git/objects/", "app/.git/refs/", "app/.git/worktrees/feat/HEAD", "app-feat/")
	write(filepath.Join(r, "app/.git/config"), "[core]\n\thooksPath = .githooks\n")
	write(filepath.Join(r, "app/.git/worktrees/feat/commondir"), "../..\n")
	write(filepath.Join(r, "app-feat/.git"), "gitdir: ../app/.git/worktrees/feat\n")
	refused(grantOf(r), filepath.Join(r, "app-feat", ".githooks", "pre-commit"))

	// A home directory with a large cache and a stow link under .config.
	h := newDir()
	t.Setenv("HOME", h)
	mkTree(t, h, ".bashrc", ".profile", "dotfiles/bash/aliases.sh", ".config/bash -> ../dotfiles/bash")
	for i := range maxHomeLinkScan + 100 {
		write(filepath.Join(h, ".cache", "pip", fmt.Sprintf("f%d", i)), "")
	}
	refused(grantOf(h), filepath.Join(h, "dotfiles", "bash", "aliases.sh"))

	// Start-up files naming directories indirectly.
	h2 := newDir()
	t.Setenv("HOME", h2)
	mkTree(t, h2, ".profile", "tools/env.sh", "sdk/init.sh", "proj/")
	write(filepath.Join(h2, ".bashrc"), ". \"$HOME\"/tools/env.sh\nfor f in ~/.bashrc.d/*.sh; do . \"$f\"; done\n")
	write(filepath.Join(h2, ".bashrc.d", "sdk.sh"), ". ~/sdk/init.sh\n")
	g := grantOf(h2)
	refused(g, filepath.Join(h2, "tools", "env.sh"))
	refused(g, filepath.Join(h2, "sdk", "init.sh"))
	if d := g.CheckPath(filepath.Join(h2, "proj", "x"), true); !d.Allowed {
		t.Errorf("proj is not writable: %+v", d)
	}
	t.Setenv("HOME", "/nonexistent")

	// Homes inside a granted directory: Debian's, Fedora's (no .profile),
	// and one with .ssh that is a repository.
	parent := newDir()
	mkTree(t, parent, "bob/.bashrc", "bob/.profile", "fed/.bashrc", "fed/.bash_logout", "vers/.ssh/", "vers/.git/HEAD", "vers/.git/objects/", "vers/.git/refs/", "plain/x")
	g = grantOf(parent)
	for _, p := range []string{"bob/.bash_aliases", "fed/.bashrc.d/x", "vers/.bash_aliases"} {
		refused(g, filepath.Join(parent, p))
	}
	if d := g.CheckPath(filepath.Join(parent, "plain", "y"), true); !d.Allowed {
		t.Errorf("plain is not writable: %+v", d)
	}
}

// TestRepositoryTopHeadHeld checks a repository whose top already holds a
// HEAD git would take: what would configure that bare repository (a
// sandbox that spoils .git/HEAD makes git look there) is protected.
func TestRepositoryTopHeadHeld(t *testing.T) {
	r, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	mkTree(t, r, ".git/HEAD", ".git/objects/", ".git/refs/", "HEAD")
	got := protectedRel(t, r)
	checkProtected(t, got, []string{"HEAD .git file", "config .git/config file", "hooks .git/hooks dir", ".git/config .git/config file"}, nil)
}

// checkProtected fails t for each of want (as protectedRel prints them)
// missing from got and each of not present in it.
func checkProtected(t *testing.T, got, want, not []string) {
	t.Helper()
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("want %q among the protected paths:\n%s", w, strings.Join(got, "\n"))
		}
	}
	for _, n := range not {
		if slices.Contains(got, n) {
			t.Errorf("%q is protected, want not:\n%s", n, strings.Join(got, "\n"))
		}
	}
}

// TestRescanFindsNewRepository: a repository made in a read-write tree
// after the grant was loaded (a session's git init under airlock serve,
// whose grant lives for many sessions) is protected by the grant Rescan
// returns, which keeps what the first scan found (red team).
func TestRescanFindsNewRepository(t *testing.T) {
	ws := t.TempDir()
	mkTree(t, ws, "old/.git/config")
	g, err := FromFlags(ws, Flags{})
	if err != nil {
		t.Fatal(err)
	}
	newConfig := filepath.Join(ws, "sub", ".git") // a nested repository is held whole
	if slices.Contains(g.Protected(), newConfig) {
		t.Fatal("protected before it existed")
	}
	mkTree(t, ws, "sub/.git/config", "sub/.git/hooks/")
	r := g.Rescan()
	for _, p := range []string{newConfig, filepath.Join(ws, "old", ".git")} {
		if !slices.Contains(r.Protected(), p) {
			t.Errorf("after Rescan, %s is not protected (%v)", p, r.Protected())
		}
	}
	if slices.Contains(g.Protected(), newConfig) {
		t.Error("Rescan changed the grant it was called on")
	}
}

// TestUngrantedHomeStartupRefs: with the user's home directory not
// granted, a start-up file that is a symlink into a read-write tree (a
// stow-style dotfiles repository) and a file a start-up file sources from
// one are protected in that tree; a directory it names is not (red team).
func TestUngrantedHomeStartupRefs(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	dots := filepath.Join(home, "dotfiles")
	work := filepath.Join(home, "work")
	mkTree(t, home, "dotfiles/bashrc", "work/tools/env.sh", "work/src/")
	if err := os.Symlink("dotfiles/bashrc", filepath.Join(home, ".bashrc")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dots, "bashrc"), []byte(". ~/work/tools/env.sh\ncd $HOME/work/src\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := FromFlags(work, Flags{ReadWrite: []string{dots, work}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(dots, "bashrc"), filepath.Join(work, "tools", "env.sh")} {
		if !slices.Contains(g.Protected(), p) {
			t.Errorf("%s is not protected", p)
		}
	}
	if slices.Contains(g.Protected(), filepath.Join(work, "src")) {
		t.Error("a directory a start-up file names is protected")
	}
}
