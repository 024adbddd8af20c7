package grant

import (
	"os"
	"path/filepath"
)

// pathDirRule names the protection of a directory on PATH inside a
// read-write tree (a project's activated .venv/bin, a bin direnv adds): the
// user's next command is looked up there, so a program a sandbox put there
// (git, ls, airlock itself) would run in place of the real one, outside any
// sandbox. No grant setting makes it writable.
const pathDirRule = "a directory on PATH"

// pathDirs returns the directories of the broker's PATH, resolved, those
// that do not exist yet included: a sandbox that made one (a bin a build
// makes later, node_modules/.bin before npm install) would choose the
// user's next command as surely as one that wrote into it. A relative
// entry is taken from the working directory, where the user's shell looks
// it up while they work there (tools, ./node_modules/.bin); "." and "",
// which name that directory itself, are left out: no grant of it could
// keep a sandbox from putting a program there.
func pathDirs() []string {
	cwd, err := os.Getwd()
	if err != nil {
		cwd = ""
	}
	var out []string
	for _, p := range filepath.SplitList(os.Getenv("PATH")) {
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
		out = append(out, res.path)
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
func (g *Grant) pathDirsIn(dirs []string) []protectedPath {
	var out []protectedPath
	for _, d := range dirs {
		if owner, ok := g.rootOf(d); ok && owner.writable && owner.dir && d != owner.path {
			out = append(out, protectedPath{path: d, name: pathDirRule, dir: true})
		}
	}
	return out
}
