package tool

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/airlockhq/airlock/wire"
)

const grepDescription = `Searches file contents with a regular expression (RE2 syntax, as in Go's regexp: no backreferences or lookaround) and reports matching lines like "grep -rn".
path is a file or a directory searched recursively (default: the working directory); glob filters file names ("*.go", or "**/*.ts" to match the path below path). output_mode: "files_with_matches" (default) lists the files that match; "content" shows "path:line:text" with context lines as "path-line-text" and groups separated by "--"; "count" shows "path:count". Results are sorted by path; head_limit keeps only the first N output lines.
Limits: binary files (a NUL byte in the first 8 KiB) and files over 32 MiB are skipped with a note; symlinks are not followed; a directory of more than 50,000 entries is searched in the order the file system lists it, with a note; lines longer than 1000 bytes are cut; output is capped (1 MiB by default) with a note when cut. Paths outside the allowed root are refused.`

// Output modes of grep.
const (
	grepContent = "content"
	grepFiles   = "files_with_matches"
	grepCount   = "count"
)

// GrepArgs are grep's arguments.
type GrepArgs struct {
	Pattern    string `json:"pattern" desc:"the regular expression to search for (RE2 syntax)"`
	Path       string `json:"path,omitempty" desc:"the file or directory to search (default: the working directory)"`
	Glob       string `json:"glob,omitempty" desc:"only search files whose name matches this glob, e.g. *.go or **/*.ts"`
	IgnoreCase bool   `json:"ignore_case,omitempty" desc:"match without regard to case"`
	Context    int    `json:"context,omitempty" desc:"lines of context before and after each match (content mode)" min:"0" max:"10"`
	OutputMode string `json:"output_mode,omitempty" desc:"content, files_with_matches (default) or count" enum:"content,files_with_matches,count"`
	HeadLimit  int    `json:"head_limit,omitempty" desc:"return only the first N lines of output" min:"1"`
}

const maxPatternBytes = 4096

func (a *GrepArgs) validate() error {
	if a.Pattern == "" {
		return fmt.Errorf("field %q: must not be empty", "pattern")
	}
	if len(a.Pattern) > maxPatternBytes {
		return fmt.Errorf("field %q: %d bytes is longer than the %d allowed", "pattern", len(a.Pattern), maxPatternBytes)
	}
	if _, err := newLineMatcher(a.Pattern, a.IgnoreCase); err != nil {
		return patternError(a.Pattern, err)
	}
	if err := checkPath("path", a.Path, true); err != nil {
		return err
	}
	if a.Glob != "" {
		if _, err := compileGlob("glob", a.Glob); err != nil {
			return err
		}
	}
	if a.Context < 0 || a.Context > 10 {
		return fmt.Errorf("field %q: must be between 0 and 10, got %d", "context", a.Context)
	}
	switch a.OutputMode {
	case "", grepContent, grepFiles, grepCount:
	default:
		return fmt.Errorf("field %q: must be one of content, files_with_matches, count; got %q", "output_mode", a.OutputMode)
	}
	if a.HeadLimit < 0 {
		return fmt.Errorf("field %q: must be >= 1, got %d", "head_limit", a.HeadLimit)
	}
	return nil
}

// patternError is the refusal of a pattern newLineMatcher did not take.
func patternError(pattern string, err error) error {
	var big errRegexpTooLarge
	if errors.As(err, &big) {
		return fmt.Errorf("field %q: the regular expression %q is too complex: %w", "pattern", pattern, big)
	}
	return fmt.Errorf("field %q: invalid regular expression %q: %v", "pattern", pattern, errnoText(err))
}

// Access reports the file or directory searched.
func (a GrepArgs) Access() Access {
	p := a.Path
	if p == "" {
		p = "."
	}
	return Access{Paths: []PathAccess{{Path: p}}}
}

var grep = define("grep", grepDescription, runGrep)

const (
	grepMaxFileBytes = 32 << 20
	grepMaxLineBytes = 1000
)

func runGrep(ctx context.Context, env Env, a GrepArgs) wire.ToolOutput {
	m, err := newLineMatcher(a.Pattern, a.IgnoreCase)
	if err != nil {
		return Failure("%v", patternError(a.Pattern, err))
	}
	s := &grepSearch{
		m:       m,
		mode:    a.OutputMode,
		context: a.Context,
		head:    a.HeadLimit,
		maxOut:  outputCap(env),
		maxFile: grepMaxFileBytes,
		env:     env,
	}
	if s.mode == "" {
		s.mode = grepFiles
	}
	if n := env.Limits.FileBytes; n > 0 && n < s.maxFile {
		s.maxFile = n
	}
	if a.Glob != "" {
		if s.glob, err = compileGlob("glob", a.Glob); err != nil {
			return Failure("%v", err)
		}
		s.globBase = !strings.Contains(a.Glob, "/")
	}
	p := a.Path
	if p == "" {
		p = "."
	}
	t, err := resolve(env, "path", p)
	if err != nil {
		return Failure("%v", err)
	}
	defer t.close()
	fi, err := t.root.Stat(t.rel)
	if err != nil {
		return Failure("%v", t.describe(err))
	}
	switch {
	case fi.IsDir():
		dir, err := t.root.OpenRoot(t.rel)
		if err != nil {
			return Failure("%v", t.describe(err))
		}
		s.searchTree(ctx, dir, t.shown)
	case fi.Mode().IsRegular():
		s.searchOne(t.root, t.rel, t.shown)
	default:
		return Failure("field %q: %s is %s; grep searches files and directories", "path", t.shown, kindOf(fi.Mode()))
	}
	return s.result(a.Pattern, t.shown)
}
