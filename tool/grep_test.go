//go:build unix

package tool

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/airlockhq/airlock/wire"
)

func TestGrep(t *testing.T) {
	w := newWorkspace(t)
	globTree(t, w)
	var ctxLines []string
	for i := 1; i <= 12; i++ {
		word := "plain"
		if i == 3 || i == 5 || i == 10 {
			word = "MATCH"
		}
		ctxLines = append(ctxLines, fmt.Sprintf("%d %s", i, word))
	}
	w.write(t, "ctx/lines.txt", strings.Join(ctxLines, "\n")+"\n")
	w.write(t, "bin/blob.bin", "MATCH\x00binary")
	w.write(t, "long/line.txt", strings.Repeat("é", 600)+"needle\n")
	w.write(t, "span/two.txt", "left\nright\n")
	mustSymlink(t, "hello.txt", filepath.Join(w.root, "in-link"))
	mustSymlink(t, "../../hello.txt", filepath.Join(w.root, "sub/deep/link"))
	if err := syscall.Mkfifo(filepath.Join(w.root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := func(rel string) string { return filepath.Join(w.root, rel) }
	const binNote = "[1 binary file skipped]"
	small := func(l wire.ToolLimits) Env { e := w.env(); e.Limits = l; return e }

	tests := []struct {
		name   string
		env    Env
		args   string
		want   check
		exact  string // when set, the whole content
		count  int    // Meta.Count, when want.isError is false
		golden bool
	}{
		{name: "files_default", args: `{"pattern":"^package"}`, exact: strings.Join([]string{p(".hidden.go"), p("a/z.go"), p("sub/a.go"), p("sub/deep/b.go"), p("x.go"), binNote}, "\n"), count: 5, golden: true},
		{name: "content", args: `{"pattern":"func \\(\\w+ \\*Reader\\)","output_mode":"content"}`, exact: p("sub/deep/b.go") + ":4:func (r *Reader) Read() {}\n" + binNote, count: 1, golden: true},
		{name: "context", args: `{"pattern":"MATCH","path":"ctx","output_mode":"content","context":1}`, exact: strings.Join([]string{
			p("ctx/lines.txt") + "-2-2 plain",
			p("ctx/lines.txt") + ":3:3 MATCH",
			p("ctx/lines.txt") + "-4-4 plain",
			p("ctx/lines.txt") + ":5:5 MATCH",
			p("ctx/lines.txt") + "-6-6 plain",
			"--",
			p("ctx/lines.txt") + "-9-9 plain",
			p("ctx/lines.txt") + ":10:10 MATCH",
			p("ctx/lines.txt") + "-11-11 plain",
		}, "\n"), count: 3, golden: true},
		{name: "context_at_edges", args: `{"pattern":"^(1|12) ","path":"ctx","output_mode":"content","context":2}`, exact: strings.Join([]string{
			p("ctx/lines.txt") + ":1:1 plain",
			p("ctx/lines.txt") + "-2-2 plain",
			p("ctx/lines.txt") + "-3-3 MATCH",
			"--",
			p("ctx/lines.txt") + "-10-10 MATCH",
			p("ctx/lines.txt") + "-11-11 plain",
			p("ctx/lines.txt") + ":12:12 plain",
		}, "\n"), count: 2},
		{name: "count", args: `{"pattern":"MATCH|plain","path":"ctx","output_mode":"count"}`, exact: p("ctx/lines.txt") + ":12", count: 12, golden: true},
		{name: "ignore_case", args: `{"pattern":"^\\d+ match$","path":"ctx","ignore_case":true,"output_mode":"count"}`, exact: p("ctx/lines.txt") + ":3", count: 3},
		{name: "glob_name", args: `{"pattern":"package","glob":"*.go","path":"sub"}`, exact: p("sub/a.go") + "\n" + p("sub/deep/b.go"), count: 2},
		{name: "glob_path", args: `{"pattern":"package","glob":"deep/*.go","path":"sub"}`, exact: p("sub/deep/b.go"), count: 1},
		{name: "glob_braces", args: `{"pattern":"e","glob":"**/*.{txt,b}"}`, want: check{contains: []string{p("a.b"), p("hello.txt"), p("sub/deep/c.txt")}}, count: 5},
		{name: "path_is_file", args: `{"pattern":"two","path":"hello.txt","output_mode":"content"}`, exact: p("hello.txt") + ":2:line two", count: 1},
		{name: "path_is_symlink_inside", args: `{"pattern":"two","path":"sub/deep/link","output_mode":"content"}`, exact: p("sub/deep/link") + ":2:line two", count: 1},
		{name: "binary_skipped", args: `{"pattern":"MATCH","path":"bin"}`, exact: `no matches for "MATCH" in ` + p("bin") + "\n" + binNote},
		{name: "large_skipped", env: small(wire.ToolLimits{FileBytes: 20}), args: `{"pattern":"MATCH","path":"ctx"}`, exact: `no matches for "MATCH" in ` + p("ctx") + "\n[files over 20 bytes skipped: " + p("ctx/lines.txt") + "]"},
		{name: "long_line_cut", args: `{"pattern":"needle","path":"long","output_mode":"content"}`, want: check{contains: []string{":1:" + strings.Repeat("é", 500) + " [... line cut: 206 more bytes]"}}, count: 1},
		{name: "no_line_spanning", args: `{"pattern":"left\\sright","path":"span"}`, exact: `no matches for "left\\sright" in ` + p("span")},
		{name: "text_anchors_per_line", args: `{"pattern":"\\Aright\\z","path":"span","output_mode":"content"}`, exact: p("span/two.txt") + ":2:right", count: 1},
		{name: "head_limit", args: `{"pattern":"MATCH","path":"ctx","output_mode":"content","head_limit":2}`, exact: p("ctx/lines.txt") + ":3:3 MATCH\n" + p("ctx/lines.txt") + ":5:5 MATCH\n[head_limit 2 reached; more output not shown]", count: 3},
		{name: "output_cap", env: small(wire.ToolLimits{OutputBytes: 300}), args: `{"pattern":".","output_mode":"content"}`, want: check{contains: []string{"[output cut at 300 bytes; more matches may follow"}}, count: -1},
		{name: "symlinks_not_followed", args: `{"pattern":"CANARY|line one"}`, exact: p("hello.txt") + "\n" + binNote, count: 1},
		{name: "no_match", args: `{"pattern":"zzz"}`, exact: `no matches for "zzz" in ` + w.root + "\n" + binNote, golden: true},
		{name: "catastrophic_pattern_is_linear", args: `{"pattern":"(a+)+$","path":"ctx"}`, exact: `no matches for "(a+)+$" in ` + p("ctx")},
		{name: "traversal", args: `{"pattern":"x","path":"../outside"}`, want: check{isError: true, contains: []string{`field "path": "../outside" lies outside the allowed root`}}},
		{name: "double_slash", args: `{"pattern":"x","path":"//etc"}`, want: check{isError: true, contains: []string{"lies outside the allowed root"}}},
		{name: "prefix_confusion", args: fmt.Sprintf(`{"pattern":"x","path":%q}`, w.evil), want: check{isError: true, contains: []string{"lies outside the allowed root"}}},
		{name: "symlink_outside", args: `{"pattern":"x","path":"out-dir"}`, want: check{isError: true, contains: []string{"leads outside the allowed root"}}},
		{name: "fifo_path", args: `{"pattern":"x","path":"fifo"}`, want: check{isError: true, contains: []string{"is a FIFO (named pipe); grep searches files and directories"}}},
		{name: "bad_regexp", args: `{"pattern":"func ("}`, want: check{isError: true, contains: []string{`field "pattern": invalid regular expression "func ("`, "missing closing )"}}},
		{name: "program_too_large", args: `{"pattern":"[\\x{0}-\\x{10FFFF}]{1000}"}`, want: check{isError: true, contains: []string{`field "pattern": the regular expression "[\\x{0}-\\x{10FFFF}]{1000}" is too complex: it compiles to 1002 instructions, more than the 1000 allowed`, "use a smaller repeat count"}}},
		{name: "program_too_large_nested", args: `{"pattern":"(([ab]{10}){10}){10}"}`, want: check{isError: true, contains: []string{`is too complex: it compiles to 1`}}},
		{name: "program_too_large_ignore_case", args: `{"pattern":"\\w{600}[k-z]{400}","ignore_case":true}`, want: check{isError: true, contains: []string{"is too complex"}}},
		{name: "long_literal_allowed", args: `{"pattern":"` + strings.Repeat("line two ", 400) + `"}`, exact: `no matches for "` + strings.Repeat("line two ", 400) + `" in ` + w.root + "\n" + binNote},
		{name: "empty_pattern", args: `{"pattern":""}`, want: check{isError: true, contains: []string{`field "pattern": must not be empty`}}},
		{name: "context_too_big", args: `{"pattern":"x","context":11}`, want: check{isError: true, contains: []string{`field "context": must be between 0 and 10, got 11`}}},
		{name: "context_negative", args: `{"pattern":"x","context":-1}`, want: check{isError: true, contains: []string{`field "context": must be between 0 and 10, got -1`}}},
		{name: "bad_mode", args: `{"pattern":"x","output_mode":"lines"}`, want: check{isError: true, contains: []string{`field "output_mode": must be one of content, files_with_matches, count; got "lines"`}}},
		{name: "bad_head_limit", args: `{"pattern":"x","head_limit":-5}`, want: check{isError: true, contains: []string{`field "head_limit": must be >= 1, got -5`}}},
		{name: "bad_glob", args: `{"pattern":"x","glob":"[z"}`, want: check{isError: true, contains: []string{`field "glob": bad pattern segment "[z"`}}},
		{name: "unknown_field", args: `{"pattern":"x","-n":true}`, want: check{isError: true, contains: []string{`unknown field "-n"`}}},
		{name: "case_only_key", args: `{"pattern":"x","Ignore_Case":true}`, want: check{isError: true, contains: []string{`use "ignore_case"`}}},
		{name: "wrong_type", args: `{"pattern":"x","context":"2"}`, want: check{isError: true, contains: []string{`field "context": expected int, got JSON string`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := tt.env
			if env.Root == "" {
				env = w.env()
			}
			out := call(t, env, "grep", tt.args)
			tt.want.verify(t, out)
			if tt.exact != "" && out.Content != tt.exact {
				t.Errorf("content:\n%s\nwant:\n%s", out.Content, tt.exact)
			}
			if !tt.want.isError && tt.count >= 0 && out.Meta.Count != tt.count {
				t.Errorf("Meta.Count = %d, want %d", out.Meta.Count, tt.count)
			}
			if tt.golden {
				golden(t, "grep_"+tt.name+".golden", render(out, w.base))
			}
		})
	}
}
