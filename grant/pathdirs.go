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

// pathDirs returns the existing directories of the broker's PATH, resolved;
// relative entries ("." and "") are left out, as they name no one
// directory.
func pathDirs() []string {
	var out []string
	for _, p := range filepath.SplitList(os.Getenv("PATH")) {
		if !filepath.IsAbs(p) {
			continue
		}
		res, err := resolve(filepath.Clean(p))
		if err != nil || res.missing > 0 || !isDir(res.path) {
			continue
		}
		out = append(out, res.path)
	}
	return out
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
