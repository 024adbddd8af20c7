package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// globTree adds the files the glob and grep tests walk.
func globTree(t *testing.T, w workspace) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(w.root, "sub", "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	w.write(t, "sub/deep/b.go", "package deep\n\n// Reader reads.\nfunc (r *Reader) Read() {}\n")
	w.write(t, "sub/deep/c.txt", "nothing here\n")
	w.write(t, "x.go", "package x\n")
	w.write(t, ".hidden.go", "package hidden\n")
	w.write(t, "a.b", "dot sorts before slash\n")
	if err := os.MkdirAll(filepath.Join(w.root, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	w.write(t, "a/z.go", "package a\n")
	mustSymlink(t, ".", filepath.Join(w.root, "loop"))
	mustSymlink(t, "../outside", filepath.Join(w.root, "out-dir"))
}

func TestGlob(t *testing.T) {
	w := newWorkspace(t)
	globTree(t, w)
	r := func(rel ...string) []string {
		var out []string
		for _, p := range rel {
			out = append(out, filepath.Join(w.root, p)+map[bool]string{true: "/"}[strings.HasSuffix(p, "/")])
		}
		return out
	}
	tests := []struct {
		name   string
		args   string
		want   []string // the result lines; nil when want applies
		check  check
		golden bool
	}{
		{name: "doublestar", args: `{"pattern":"**/*.go"}`, want: r(".hidden.go", "a/z.go", "sub/a.go", "sub/deep/b.go", "x.go"), golden: true},
		{name: "one_level", args: `{"pattern":"*.go"}`, want: r(".hidden.go", "x.go")},
		{name: "under_dir", args: `{"pattern":"sub/**"}`, want: r("sub/a.go", "sub/deep/", "sub/deep/b.go", "sub/deep/c.txt")},
		{name: "braces", args: `{"pattern":"{x,sub/a}.go"}`, want: r("sub/a.go", "x.go")},
		{name: "class_and_question", args: `{"pattern":"sub/*/[b-c].?o"}`, want: r("sub/deep/b.go")},
		{name: "path_arg", args: `{"pattern":"*.go","path":"sub"}`, want: r("sub/a.go")},
		{name: "literal", args: `{"pattern":"sub/a.go"}`, want: r("sub/a.go")},
		{name: "absolute", args: fmt.Sprintf(`{"pattern":%q}`, filepath.Join(w.root, "sub", "*.go")), want: r("sub/a.go")},
		{name: "component_order", args: `{"pattern":"a*"}`, want: r("a/", "a.b")},
		{name: "symlinks_not_followed", args: `{"pattern":"**/secret.txt"}`, check: check{contains: []string{"no paths match in"}}},
		{name: "loop_not_followed", args: `{"pattern":"**/c.txt"}`, want: r("sub/deep/c.txt")},
		{name: "symlink_matched_not_entered", args: `{"pattern":"loo*"}`, want: r("loop")},
		{name: "no_match", args: `{"pattern":"*.rs"}`, check: check{contains: []string{"no paths match in " + w.root}}, golden: true},
		{name: "pattern_traversal", args: `{"pattern":"../outside/*"}`, check: check{isError: true, contains: []string{`field "pattern": "../outside" lies outside the allowed root`}}},
		{name: "path_traversal", args: `{"pattern":"*","path":"../outside"}`, check: check{isError: true, contains: []string{`field "path": "../outside" lies outside`}}},
		{name: "path_double_slash", args: `{"pattern":"*","path":"//etc"}`, check: check{isError: true, contains: []string{`field "path"`, "lies outside"}}},
		{name: "path_prefix_confusion", args: fmt.Sprintf(`{"pattern":"*","path":%q}`, w.evil), check: check{isError: true, contains: []string{"lies outside"}}},
		{name: "symlinked_base_outside", args: `{"pattern":"out-dir/*"}`, check: check{isError: true, contains: []string{"leads outside the allowed root"}}},
		{name: "path_is_file", args: `{"pattern":"*","path":"hello.txt"}`, check: check{isError: true, contains: []string{`field "path": ` + filepath.Join(w.root, "hello.txt") + " is a regular file, not a directory"}}},
		{name: "bad_class", args: `{"pattern":"[a"}`, check: check{isError: true, contains: []string{`field "pattern": bad pattern segment "[a"`}}},
		{name: "unbalanced_brace", args: `{"pattern":"{a,b"}`, check: check{isError: true, contains: []string{`field "pattern": unbalanced '{'`}}},
		{name: "dotdot_after_wildcard", args: `{"pattern":"*/../x"}`, check: check{isError: true, contains: []string{`field "pattern"`, `may not use ".."`}}},
		{name: "expansion_too_large", args: `{"pattern":"` + strings.Repeat("{a,b}", 10) + strings.Repeat("*a", 10) + `"}`, check: check{isError: true, contains: []string{`field "pattern": "{a,b}`, "expands to 1024 alternatives totalling 30720 bytes, more than the 16384 allowed"}}},
		{name: "pattern_too_long", args: `{"pattern":"` + strings.Repeat("*", maxPatternBytes+1) + `"}`, check: check{isError: true, contains: []string{`field "pattern": 4097 bytes is longer than the 4096 allowed`}}},
		{name: "too_many_alternatives", args: `{"pattern":"{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}"}`, check: check{isError: true, contains: []string{`field "pattern": more than 1024 alternatives`}}},
		{name: "empty_pattern", args: `{"pattern":""}`, check: check{isError: true, contains: []string{`field "pattern": must not be empty`}}},
		{name: "unknown_field", args: `{"pattern":"*","depth":3}`, check: check{isError: true, contains: []string{`unknown field "depth"`}}},
		{name: "wrong_type", args: `{"pattern":true}`, check: check{isError: true, contains: []string{`field "pattern": expected string`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := call(t, w.env(), "glob", tt.args)
			if tt.want != nil {
				if out.IsError {
					t.Fatalf("refused: %s", out.Content)
				}
				if d := cmp.Diff(tt.want, strings.Split(out.Content, "\n")); d != "" {
					t.Errorf("glob %s (-want +got):\n%s", tt.args, d)
				}
				if out.Meta.Count != len(tt.want) {
					t.Errorf("Meta.Count = %d, want %d", out.Meta.Count, len(tt.want))
				}
			} else {
				tt.check.verify(t, out)
			}
			if tt.golden {
				golden(t, "glob_"+tt.name+".golden", render(out, w.base))
			}
		})
	}
}

func TestGlobCapsResults(t *testing.T) {
	w := newWorkspace(t)
	if err := os.Mkdir(filepath.Join(w.root, "many"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range globMaxResults + 5 {
		w.write(t, fmt.Sprintf("many/f%04d", i), "")
	}
	out := call(t, w.env(), "glob", `{"pattern":"many/*"}`)
	lines := strings.Split(out.Content, "\n")
	if len(lines) != globMaxResults+1 || !out.Truncated || out.Meta.Count != globMaxResults+5 {
		t.Fatalf("got %d lines, Truncated=%v, Count=%d; want %d lines, truncated, count %d",
			len(lines), out.Truncated, out.Meta.Count, globMaxResults+1, globMaxResults+5)
	}
	if want := filepath.Join(w.root, "many/f0999"); lines[globMaxResults-1] != want {
		t.Errorf("last path = %q, want %q (the first 1000 in order)", lines[globMaxResults-1], want)
	}
	if want := "[... 5 more matching paths not shown; narrow the pattern or path]"; lines[globMaxResults] != want {
		t.Errorf("marker = %q, want %q", lines[globMaxResults], want)
	}
}

func TestGlobStopsWithContext(t *testing.T) {
	w := newWorkspace(t)
	d, _ := Lookup("glob")
	a, err := d.Parse(json.RawMessage(`{"pattern":"**"}`))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out := d.Run(ctx, w.env(), a)
	if !out.Truncated || !strings.Contains(out.Content, "[search stopped early (context canceled); results are incomplete]") {
		t.Errorf("want a stopped-early note, got Truncated=%v:\n%s", out.Truncated, out.Content)
	}
}
