package grant

import (
	"os"
	"path/filepath"
	"strings"
)

// searchPaths are the variables of the broker's environment that list
// where host programs find code: PATH the user's next command (a
// project's activated .venv/bin, a bin direnv adds), the others the
// libraries every dynamically linked program loads and the modules of the
// interpreters (python runs any sitecustomize.py it finds on its path at
// every start). A program or library a sandbox put in one of their
// directories would run in place of the real one, outside any sandbox.
var searchPaths = []string{"PATH", "LD_LIBRARY_PATH", "PYTHONPATH", "PERL5LIB", "PERLLIB", "RUBYLIB", "NODE_PATH"}

// searchFiles are the variables of the broker's environment that name a
// file host programs run or load: every non-interactive bash sources
// $BASH_ENV, an interactive sh $ENV and python $PYTHONSTARTUP, and every
// dynamically linked program loads the libraries of $LD_PRELOAD (those
// named by a path; a bare name is looked up in the library directories).
var searchFiles = []string{"BASH_ENV", "ENV", "PYTHONSTARTUP", "LD_PRELOAD"}

// pathFilePrefix starts the rule name of a file of searchFiles.
const pathFilePrefix = "the file named by "

// pathDirPrefix starts the rule name of a directory of searchPaths inside
// a read-write tree, which stays read-only; no grant setting makes it
// writable.
const pathDirPrefix = "a directory on "

// pathDirRule names the protection of a directory of the variable v.
func pathDirRule(v string) string { return pathDirPrefix + v }

// isPathDirRule reports whether name is a pathDirRule, or the rule of a
// file of searchFiles.
func isPathDirRule(name string) bool {
	return strings.HasPrefix(name, pathDirPrefix) || strings.HasPrefix(name, pathFilePrefix)
}

// pathRuleVariable returns the variable a pathDirRule name is of, and
// whether it names a file.
func pathRuleVariable(name string) (string, bool) {
	if v, ok := strings.CutPrefix(name, pathFilePrefix); ok {
		return v, true
	}
	return strings.TrimPrefix(name, pathDirPrefix), false
}

// pathDirWhy says why a directory (or file) of the variable v stays
// read-only.
func pathDirWhy(v string) string {
	switch v {
	case "BASH_ENV", "ENV", "PYTHONSTARTUP":
		return "what a sandbox wrote there would run, outside any sandbox, in the host's next shell or interpreter that reads it"
	case "PATH":
		return "a program a sandbox put there would run, outside any sandbox, in place of the command of its name (git, ls, airlock itself)"
	}
	return "a library or module a sandbox put there would be loaded, outside any sandbox, by the host's programs that read it"
}

// searchDir is a directory of one of searchPaths, or a file of one of
// searchFiles, resolved.
type searchDir struct {
	path     string
	variable string
	file     bool
}

// pathDirs returns the directories of the broker's searchPaths, resolved,
// those that do not exist yet included: a sandbox that made one (a bin a
// build makes later, node_modules/.bin before npm install) would choose
// the user's next command as surely as one that wrote into it. A relative
// entry is taken from the working directory, where the user's shell and
// programs look it up while they work there (tools, ./node_modules/.bin);
// "." and "", which name that directory itself, are left out: no grant of
// it could keep a sandbox from putting a program there.
func pathDirs() []searchDir {
	cwd, err := os.Getwd()
	if err != nil {
		cwd = ""
	}
	var out []searchDir
	for _, v := range searchPaths {
		for _, p := range filepath.SplitList(os.Getenv(v)) {
			if !filepath.IsAbs(p) {
				if cwd == "" || p == "" {
					continue
				}
				if p = filepath.Join(cwd, p); p == filepath.Clean(cwd) {
					continue
				}
			}
			res, err := resolve(filepath.Clean(p))
			if err != nil || !isDir(existingPart(res)) {
				continue
			}
			out = append(out, searchDir{path: res.path, variable: v})
		}
	}
	for _, v := range searchFiles {
		val := os.Getenv(v)
		list := []string{val}
		if v == "LD_PRELOAD" {
			list = strings.FieldsFunc(val, func(c rune) bool { return c == ' ' || c == ':' })
		}
		for _, p := range list {
			if p == "" || (v == "LD_PRELOAD" && !strings.Contains(p, "/")) {
				continue
			}
			if !filepath.IsAbs(p) {
				if cwd == "" {
					continue
				}
				p = filepath.Join(cwd, p)
			}
			res, err := resolve(filepath.Clean(p))
			// An existing file, or a missing one in a directory.
			if err != nil || isDir(res.path) || (res.missing > 0 && !isDir(existingPart(res))) {
				continue
			}
			out = append(out, searchDir{path: res.path, variable: v, file: true})
		}
	}
	return out
}

// existingPart is the existing directory res.path lies in, or res.path
// itself when it exists.
func existingPart(res resolved) string {
	p := res.path
	for range res.missing {
		p = filepath.Dir(p)
	}
	return p
}

// pathDirsIn returns the protected paths of the directories of dirs
// (pathDirs) that lie inside one of g's read-write trees, below its top.
func (g *Grant) pathDirsIn(dirs []searchDir) []protectedPath {
	var out []protectedPath
	for _, d := range dirs {
		owner, ok := g.rootOf(d.path)
		switch {
		case !ok || !owner.writable || !owner.dir || d.path == owner.path:
		case d.file:
			out = append(out, protectedPath{path: d.path, name: pathFilePrefix + d.variable})
		default:
			out = append(out, protectedPath{path: d.path, name: pathDirRule(d.variable), dir: true})
		}
	}
	return out
}
