package grant

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestGitIncludeWalkBounded: a sandbox can leave a configuration that
// includes itself, or many files, in a tree; each later session's start
// reads it. A walk reads each file once, at most maxWalkFiles of them and
// maxConfigFile bytes of each, and a bound it meets leaves the tree's scan
// incomplete (its risk is reported) rather than silently short.
func TestGitIncludeWalkBounded(t *testing.T) {
	t.Setenv("HOME", "/nonexistent")
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("GIT_CONFIG_GLOBAL", "")
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	many := ""
	for i := range maxWalkFiles + 44 {
		many += fmt.Sprintf("[include]\n\tpath = ../inc/%d.cfg\n", i)
	}
	tests := []struct {
		name     string
		config   string
		complete bool
	}{
		{"a config that includes itself three times", strings.Repeat("[include]\n\tpath = config\n", 3), true},
		{"more included files than a walk reads", many, false},
		{"a config larger than is read", "[core]\n\teditor = vi\n" + strings.Repeat("#", maxConfigFile) + "\n[core]\n\thooksPath = hidden\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			mkTree(t, r, ".git/HEAD", ".git/objects/", ".git/refs/", "inc/")
			for i := range maxWalkFiles + 44 {
				if err := os.WriteFile(filepath.Join(r, "inc", fmt.Sprintf("%d.cfg", i)), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(r, ".git", "config"), []byte(tt.config), 0o644); err != nil {
				t.Fatal(err)
			}
			list, complete := protectedPaths(r, nil, []string{r}, nil)
			if complete != tt.complete {
				t.Errorf("complete = %v, want %v", complete, tt.complete)
			}
			n := 0
			for _, p := range list {
				if p.path == filepath.Join(r, ".git", "config") {
					n++
				}
			}
			if n != 1 {
				t.Errorf(".git/config is listed %d times, want once", n)
			}
		})
	}
}

// TestConfigReaderReadsEachFileOnce: the walks of the red team's
// configuration (a dozen includes of itself, which git's depth limit of 10
// alone let run to 12^10 reads) and of a dozen files that each include
// all twelve read each file once.
func TestConfigReaderReadsEachFileOnce(t *testing.T) {
	r, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	self := filepath.Join(r, "self")
	if err := os.WriteFile(self, []byte(strings.Repeat("[include]\n\tpath = self\n", 12)), 0o644); err != nil {
		t.Fatal(err)
	}
	var all string
	for i := range 12 {
		all += fmt.Sprintf("[include]\n\tpath = %d\n", i)
	}
	for i := range 12 {
		if err := os.WriteFile(filepath.Join(r, fmt.Sprint(i)), []byte(all), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		start string
		files int
	}{{self, 1}, {filepath.Join(r, "0"), 12}} {
		c := newConfigReader("")
		var refs gitConfigRefs
		c.readGitConfig(tt.start, &refs)
		if read := maxConfigFiles - c.files; read != tt.files || c.short {
			t.Errorf("walk from %s read %d files (short %v), want %d", filepath.Base(tt.start), read, c.short, tt.files)
		}
	}
}

// TestGitProgramRefsProtected: what git's configuration names that git
// runs, beyond hooks directories and includes, is read-only in a
// read-write tree: init.templateDir (whole: its hooks are copied into
// every new repository), and every file a word of a command or program
// value names (core.fsmonitor, core.pager, aliases starting with "!",
// filters, ...): absolute or "~/" ones in the user's configuration,
// relative ones too in a repository's own (relative to its top). A
// missing one is held where it is a path for sure (absolute, or the
// program itself with a slash in it); a word that names a directory, or
// a relative argument that does not exist, is left alone.
func TestGitProgramRefsProtected(t *testing.T) {
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("GIT_CONFIG_GLOBAL", "")
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	tests := []struct {
		name      string
		config    string // the repository's .git/config
		global    string // ~/.gitconfig
		want, not []string
	}{{
		name:   "the user's template directory and fsmonitor (the red team's)",
		global: "[init]\n\ttemplateDir = TREE/tmpl\n[core]\n\tfsmonitor = TREE/bin/fsmon\n",
		want:   []string{"tmpl .git/hooks dir", "bin/fsmon .git/config file"},
	}, {
		name:   "the user's absolute programs, held while missing; relative words are not the user's to name",
		global: "[core]\n\tpager = \"TREE/bin/pager -R\"\n\tsshCommand = ssh -F TREE/ssh.conf\n[alias]\n\tx = !sh scripts/run.sh\n[credential]\n\thelper = store\n",
		want:   []string{"bin/pager .git/config file", "ssh.conf .git/config file"},
		not:    []string{"scripts/run.sh .git/config file", "store .git/config file"},
	}, {
		name: "a repository's programs, relative to its top",
		config: `[core]
	editor = tools/editor
	sshCommand = tools/ssh -v
	askPass = ./tools/askpass
	fsmonitor = .git/fsmon.sh
[sequence]
	editor = tools/seqed
[credential "https://example.com"]
	helper = !tools/cred
[gpg]
	program = tools/gpg
[gpg "ssh"]
	program = tools/gpgssh
[diff]
	external = tools/dext
[diff "bin"]
	command = tools/dcmd
	textconv = tools/tconv
[difftool "t"]
	cmd = tools/dtool $LOCAL $REMOTE
[mergetool "m"]
	cmd = "tools/mtool --out=./tools/out"
[filter "f"]
	clean = tools/clean %f
	smudge = tools/smudge
	process = tools/process
[pager]
	log = tools/logpager
[init]
	templateDir = tmpl
`,
		want: []string{"tools/editor .git/config file", "tools/ssh .git/config file", "tools/askpass .git/config file",
			".git/fsmon.sh .git/config file", "tools/seqed .git/config file", "tools/cred .git/config file",
			"tools/gpg .git/config file", "tools/gpgssh .git/config file", "tools/dext .git/config file",
			"tools/dcmd .git/config file", "tools/tconv .git/config file", "tools/dtool .git/config file",
			"tools/mtool .git/config file", "tools/out .git/config file", "tools/clean .git/config file",
			"tools/smudge .git/config file", "tools/process .git/config file", "tools/logpager .git/config file",
			"tmpl .git/hooks dir"},
	}, {
		name:   "aliases: only shell ones, their scripts, not their directories or missing arguments",
		config: "[alias]\n\tlg = log scripts/notrun.sh\n\tr = \"!f() { sh scripts/run.sh; cd src && make; }; f\"\n\tco = !git checkout origin/main\n\th = !TREE/abs/hook\n",
		want:   []string{"scripts/run.sh .git/config file", "abs/hook .git/config file"},
		not:    []string{"scripts/notrun.sh .git/config file", "src .git/config file", "origin/main .git/config file", "git .git/config file"},
	}, {
		name:   "outside the tree, options and URLs: nothing",
		config: "[core]\n\tpager = /usr/bin/less -FRX\n[remote \"o\"]\n\tuploadpack = ssh://host/x/y\n",
		not:    []string{"-FRX .git/config file"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			mkTree(t, r, ".git/HEAD", ".git/objects/", ".git/refs/", "tmpl/hooks/", "bin/fsmon", "src/",
				"scripts/run.sh", "scripts/notrun.sh", "tools/editor", "tools/ssh", "tools/dtool", "tools/clean")
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

// TestGlobalTemplateDirNotWritable: the template directory the user's
// configuration names cannot be granted read-write (its hooks go into
// every new repository), and stays read-only with a home directory's top.
func TestGlobalTemplateDirNotWritable(t *testing.T) {
	home, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("GIT_CONFIG_GLOBAL", "")
	t.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	mkTree(t, home, "templates/hooks/", "proj/")
	if err := os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[init]\n\ttemplateDir = ~/templates\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := FromFlags(filepath.Join(home, "templates", "hooks"), Flags{}); err == nil || !strings.Contains(err.Error(), "template directory") {
		t.Errorf("granting the template directory's hooks read-write: %v, want a refusal", err)
	}
	g, err := FromFlags(home, Flags{})
	if err != nil {
		t.Fatal(err)
	}
	if d := g.CheckPath(filepath.Join(home, "templates", "hooks", "post-checkout"), true); d.Allowed {
		t.Errorf("the template directory is writable in a home directory granted read-write")
	}
}
