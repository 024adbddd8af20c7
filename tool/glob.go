package tool

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/airlockhq/airlock/wire"
)

const globDescription = `Finds files and directories whose paths match a glob pattern and returns their absolute paths, one a line, sorted by path (directories end in "/").
Pattern syntax: "**" matches any number of directories, "*" any run of characters within a name, "?" one character, "[abc]" a class, "{a,b}" alternatives; for example "**/*.go" or "src/{lib,test}/*.ts". A relative pattern starts at path (default: the working directory).
Limits: symlinked directories are not followed, unreadable directories are skipped, directories more than 256 levels deep are not searched, and at most 1000 paths are returned (then a note says how many more matched). Paths outside the allowed root are refused.`

// GlobArgs are glob's arguments.
type GlobArgs struct {
	Pattern string `json:"pattern" desc:"the glob pattern, e.g. **/*.go; relative to path unless absolute"`
	Path    string `json:"path,omitempty" desc:"the directory to search from (default: the working directory)"`
}

func (a *GlobArgs) validate() error {
	if err := checkPath("pattern", a.Pattern, false); err != nil {
		return err
	}
	_, rest := splitStatic(strings.TrimLeft(a.Pattern, "/"))
	if _, err := compileGlob("pattern", rest); err != nil {
		return err
	}
	return checkPath("path", a.Path, true)
}

// Access reports the directory searched.
func (a GlobArgs) Access() Access {
	return Access{Paths: []PathAccess{{Path: globBase(a.Path, a.Pattern)}}}
}

// globBase is the directory a glob walks: path joined with the pattern's
// wildcard-free leading directories (or those alone, for an absolute pattern).
func globBase(dir, pattern string) string {
	prefix, _ := splitStatic(strings.TrimLeft(pattern, "/"))
	switch {
	case strings.HasPrefix(pattern, "/"):
		return "/" + prefix
	case dir == "" && prefix == "":
		return "."
	case dir == "":
		return prefix
	case prefix == "":
		return dir
	}
	return dir + "/" + prefix // not filepath.Join: resolve must see "f.txt/.." to refuse it
}

var glob = define("glob", globDescription, runGlob)

const (
	globMaxResults = 1000
	maxWalkDepth   = 256
)

func runGlob(ctx context.Context, env Env, a GlobArgs) wire.ToolOutput {
	_, rest := splitStatic(strings.TrimLeft(a.Pattern, "/"))
	g, err := compileGlob("pattern", rest)
	if err != nil {
		return Failure("%v", err)
	}
	field := "path"
	if prefix, _ := splitStatic(strings.TrimLeft(a.Pattern, "/")); strings.HasPrefix(a.Pattern, "/") || strings.Contains("/"+prefix+"/", "/../") {
		field = "pattern"
	}
	t, err := resolve(env, field, globBase(a.Path, a.Pattern))
	if err != nil {
		return Failure("%v", err)
	}
	defer t.close()
	if fi, err := t.root.Stat(t.rel); err != nil {
		return Failure("%v", t.describe(err))
	} else if !fi.IsDir() {
		return Failure("field %q: %s is %s, not a directory", field, t.shown, kindOf(fi.Mode()))
	}
	dir, err := t.root.OpenRoot(t.rel)
	if err != nil {
		return Failure("%v", t.describe(err))
	}
	defer dir.Close()

	w := globWalk{ctx: ctx, g: g, keep: globMaxResults, base: t.shown, env: env}
	w.walk(dir, "", g.start(), 0)
	return w.render(t.shown, outputCap(env))
}

// globWalk collects matches, keeping only the first keep in path order.
type globWalk struct {
	ctx       context.Context
	base      string // the absolute path of the walk's top
	env       Env
	g         *globPattern
	keep      int
	found     []string // at most 2*keep, trimmed to the smallest keep as it grows
	total     int
	tooDeep   int
	stoppedBy error
}

func (w *globWalk) walk(dir *os.Root, rel string, states []globState, depth int) {
	f, err := dir.Open(".")
	if err != nil {
		return // unreadable: skipped silently
	}
	defer f.Close()
	for {
		ents, err := f.ReadDir(512)
		for _, e := range ents {
			if w.stoppedBy = w.ctx.Err(); w.stoppedBy != nil {
				return
			}
			name := e.Name()
			next, matched := w.g.step(states, name)
			child := name
			if rel != "" {
				child = rel + "/" + name
			}
			isDir := e.Type().IsDir() // from the directory entry: a symlink is never a directory here
			if w.env.hidden(filepath.Join(w.base, child)) {
				continue // airlock's placeholder, not the user's
			}
			if matched {
				if isDir {
					w.add(child + "/")
				} else {
					w.add(child)
				}
			}
			if !isDir || !w.g.more(next) {
				continue
			}
			if depth+1 >= maxWalkDepth {
				w.tooDeep++
				continue
			}
			sub, err := dir.OpenRoot(name)
			if err != nil {
				continue
			}
			w.walk(sub, child, next, depth+1)
			sub.Close()
			if w.stoppedBy != nil {
				return
			}
		}
		if err != nil { // io.EOF, or an unreadable directory: skipped silently
			return
		}
	}
}

func (w *globWalk) add(p string) {
	w.total++
	w.found = append(w.found, p)
	if len(w.found) >= 2*w.keep {
		w.trim()
	}
}

func (w *globWalk) trim() {
	slices.SortFunc(w.found, comparePaths)
	if len(w.found) > w.keep {
		w.found = w.found[:w.keep]
	}
}

func comparePaths(a, b string) int {
	switch {
	case a == b:
		return 0
	case pathLess(a, b):
		return -1
	}
	return 1
}

func (w *globWalk) render(base string, maxBytes int) wire.ToolOutput {
	w.trim()
	var b strings.Builder
	shown := 0
	for _, p := range w.found {
		line := filepath.Join(base, p)
		if strings.HasSuffix(p, "/") && line != "/" {
			line += "/"
		}
		line = shownName(line)
		if b.Len()+len(line)+1 > maxBytes {
			break
		}
		b.WriteString(line)
		b.WriteByte('\n')
		shown++
	}
	out := wire.ToolOutput{Meta: wire.Meta{Count: w.total}}
	if w.total == 0 {
		b.WriteString(fmt.Sprintf("no paths match in %s\n", base))
	}
	if more := w.total - shown; more > 0 {
		fmt.Fprintf(&b, "[... %d more matching paths not shown; narrow the pattern or path]\n", more)
		out.Truncated = true
	}
	if w.tooDeep > 0 {
		fmt.Fprintf(&b, "[%d directories deeper than %d levels not searched]\n", w.tooDeep, maxWalkDepth)
	}
	if w.stoppedBy != nil {
		fmt.Fprintf(&b, "[search stopped early (%v); results are incomplete]\n", w.stoppedBy)
		out.Truncated = true
	}
	out.Content = strings.TrimSuffix(b.String(), "\n")
	return out
}
