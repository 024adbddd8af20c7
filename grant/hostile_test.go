package grant

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
)

// deepGrants are small files whose nesting made the TOML library take
// seconds to minutes and hundreds of MB (issue 11.9).
var deepGrants = map[string]string{
	"inline tables":          "a = " + strings.Repeat("{b = ", 4000) + "1" + strings.Repeat("}", 4000),
	"arrays":                 "a = " + strings.Repeat("[", 4000) + "1" + strings.Repeat("]", 4000),
	"dotted key":             strings.Repeat("a.", 8000) + "a = 1",
	"table header":           "[" + strings.Repeat("a.", 8000) + "a]",
	"array of tables header": "[[" + strings.Repeat(`"a".`, 4000) + "a]]",
	"dotted keys in inline tables": "[paths]\nx = " + strings.Repeat("{"+strings.Repeat("k.", 10)+"k = ", 10) +
		"1" + strings.Repeat("}", 10),
	"after a comment and strings": "# [[[[\n[paths]\nread_write = [\"[[[\", '{{{', \"\"\"\n]]]\"\"\"]\n" +
		"deny = " + strings.Repeat("[", 100) + strings.Repeat("]", 100),
}

// TestParseRefusesDeepNesting: nesting past maxNesting is refused before the
// TOML library sees it, with an error naming the file, the line and the depth.
func TestParseRefusesDeepNesting(t *testing.T) {
	for name, doc := range deepGrants {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(doc), "deep.toml", "/")
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("Parse = %v, want an *Error", err)
			}
			wantLine := strings.Count(doc[:strings.LastIndexAny(doc, "=[")], "\n") + 1
			if name == "table header" || name == "array of tables header" || name == "dotted key" {
				wantLine = 1
			}
			if e.File != "deep.toml" || e.Line != wantLine || !strings.Contains(e.Msg, fmt.Sprintf("nested more than %d levels deep", maxNesting)) {
				t.Errorf("error = %v (line %d), want deep.toml:%d: nested more than %d levels deep", err, e.Line, wantLine, maxNesting)
			}
		})
	}
}

// TestParseNestingWithinBound: what a grant may hold is not refused for its
// depth, nor is a string or comment full of brackets and dots.
func TestParseNestingWithinBound(t *testing.T) {
	for _, doc := range []string{
		"[secrets.GH]\nfrom = \"env:GH\"\ntools = [\"http_fetch\"]\nhosts = [\"api.github.com\"]\n",
		"[paths]\nread_write = [\"a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s.t.u.v.w.x.y.z.a.b.c.d.e.f.g.h.i.j.k.l.m.n.o.p.q.r.s.t.u.v.w.x.y.z.a.b.c.d.e.f\"]\n",
		"# " + strings.Repeat("[{.", 100) + "\n[paths]\nread_only = ['''\n" + strings.Repeat("[{.", 100) + "''']\n",
		"x = " + strings.Repeat("[", maxNesting-2) + strings.Repeat("]", maxNesting-2),
	} {
		_, err := Parse([]byte(doc), "ok.toml", "/")
		if err != nil && strings.Contains(err.Error(), "nested more than") {
			t.Errorf("Parse(%q) = %v; refused for depth", doc, err)
		}
	}
}

// TestProblemsCapped: a table of 4,000 bad keys stops collecting problems at
// maxErrors and counts the rest (issue 11.9; before, every one of them was
// kept and each re-parsed the file to find its line: 68 s).
func TestProblemsCapped(t *testing.T) {
	doc := manyBadKeys(4000)
	var tree map[string]any
	if _, err := toml.Decode(doc, &tree); err != nil {
		t.Fatal(err)
	}
	var ps problems
	specFromTOML(tree, &ps)
	if len(ps.list) != maxErrors || ps.n != 4000 {
		t.Errorf("kept %d problems of %d, want %d of 4000", len(ps.list), ps.n, maxErrors)
	}
	_, err := Parse([]byte(doc), "many.toml", "/")
	lines := strings.Split(fmt.Sprint(err), "\n")
	if len(lines) != maxErrors+1 || lines[maxErrors] != fmt.Sprintf("many.toml: and %d more problems", 4000-maxErrors) {
		t.Fatalf("got %d error lines ending %q, want %d ending with the count of the rest", len(lines), lines[len(lines)-1], maxErrors+1)
	}
	if !strings.HasPrefix(lines[0], "many.toml:2: paths.k0: unknown key") {
		t.Errorf("first line = %q, want the line of paths.k0", lines[0])
	}
}

// manyBadKeys is a [paths] table of n unknown keys.
func manyBadKeys(n int) string {
	var b strings.Builder
	b.WriteString("[paths]\n")
	for i := range n {
		fmt.Fprintf(&b, "k%d = 1\n", i)
	}
	return b.String()
}

// TestErrorLinesNameTheFile: however the input is made, every line of a
// grant error starts with the file's name: text from the input (which the
// TOML library quotes raw) has its line breaks and control characters
// escaped (issue 11.10; the fuzzer found "\"\\\n").
func TestErrorLinesNameTheFile(t *testing.T) {
	for _, doc := range []string{
		"\"\\\n",
		"a = \"x\\\ny\"",
		"\"\\\u2028\"",
		"[paths]\n\"a\nb\" = 1",
		"[\"x\\u000ay\"]\nz = 1",
		"[paths]\n\"\\u000a\\u0085\\u2028\\u202e\" = 1",
		"[paths]\nread_write = [\"\\u0000\\u000d\\u001b[31m\"]",
	} {
		_, err := Parse([]byte(doc), "evil.toml", "/")
		if err == nil {
			t.Errorf("Parse(%q) succeeded", doc)
			continue
		}
		for _, line := range strings.Split(err.Error(), "\n") {
			if !strings.HasPrefix(line, "evil.toml") {
				t.Errorf("Parse(%q): error line %q does not name the file; error:\n%s", doc, line, err)
			}
			if strings.ContainsAny(line, "\r\x00\x1b\u2028\u0085\u202e") {
				t.Errorf("Parse(%q): error line %q holds an unescaped control character", doc, line)
			}
		}
	}
	e := &Error{File: "a\nb.toml", Line: 3, Key: "k", Msg: "bad \x00 \xff value"}
	if got, want := e.Error(), `a\nb.toml:3: k: bad \x00 \xff value`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

// TestLongPathsRefusedCheaply: a path is a model's argument, and each
// location its resolution visits was kept, so a 120 KB path of "a/" took
// the broker 3.5 GB and half a minute (red team). A path longer than Linux
// takes is refused before it is walked, one that leads (through symlinks)
// somewhere longer or through too many locations as soon as it does; a
// long path Linux would take is still checked.
func TestLongPathsRefusedCheaply(t *testing.T) {
	ws := t.TempDir()
	g, err := FromFlags(ws, Flags{ReadWrite: []string{ws}})
	if err != nil {
		t.Fatal(err)
	}
	allocs := func(f func()) uint64 {
		var a, b runtime.MemStats
		runtime.ReadMemStats(&a)
		f()
		runtime.ReadMemStats(&b)
		return b.TotalAlloc - a.TotalAlloc
	}
	long := ws + "/" + strings.Repeat("a/", 60000) + "x"
	var d Decision
	if n := allocs(func() { d = g.Check(Call{Tool: "read_file", Paths: []PathUse{{Path: long}}}) }); n > 4<<20 {
		t.Errorf("checking a %d-byte path allocated %d MB", len(long), n>>20)
	}
	if d.Allowed || !strings.Contains(d.Reason, "longer than the 4096 Linux takes") {
		t.Errorf("a %d-byte path: %+v", len(long), d)
	}
	// Within PATH_MAX: checked as any other (missing components inside
	// the grant are allowed).
	deep := ws + "/" + strings.Repeat("a/", (4095-len(ws)-3)/2) + "x"
	if d := g.Check(Call{Tool: "write_file", Paths: []PathUse{{Path: deep, Write: true}}}); !d.Allowed {
		t.Errorf("a %d-byte path inside the grant: %+v", len(deep), d)
	}
	// Symlinks that each climb in and out of a directory 800 times.
	if err := os.Mkdir(filepath.Join(ws, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(strings.Repeat("d/../", 800), filepath.Join(ws, "s")); err != nil {
		t.Fatal(err)
	}
	if d := g.Check(Call{Tool: "read_file", Paths: []PathUse{{Path: ws + "/s/s/s/x"}}}); d.Allowed || !strings.Contains(d.Reason, "passes through more than 2048 locations") {
		t.Errorf("a path through 2,400 locations: %+v", d)
	}
	if d := g.Check(Call{Tool: "read_file", Paths: []PathUse{{Path: ws + "/s/x"}}}); !d.Allowed {
		t.Errorf("a path through 800 locations: %+v", d)
	}
}

// TestParseRefusesTildePaths: a grant path that starts with "~" is
// refused, in every key that takes one, since nothing expands it: it
// named a "~" directory in the grant's own directory, so a paths.deny of
// "~/.aws" denied nothing the user meant. A "./~" path is taken as written.
func TestParseRefusesTildePaths(t *testing.T) {
	dir := fixture(t, "w/secret", "w/~/x")
	for _, tt := range []struct{ name, text string }{
		{"deny", "[paths]\nread_write = [\"w\"]\ndeny = [\"~/secret\"]\n"},
		{"deny of another user's", "[paths]\nread_write = [\"w\"]\ndeny = [\"~root/secret\"]\n"},
		{"read_only", "[paths]\nread_only = [\"~/w\"]\n"},
		{"read_write", "[paths]\nread_write = [\"~\"]\n"},
		{"secret file", "[network]\nhosts = [\"a.test\"]\n[secrets.T]\nfrom = \"file:~/tok\"\ntools = [\"http_fetch\"]\nhosts = [\"a.test\"]\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.text), "grant.toml", dir)
			if err == nil || !strings.Contains(err.Error(), `starts with "~"`) || !strings.Contains(err.Error(), "absolute") {
				t.Errorf("Parse = %v, want a refusal of the ~ path saying to write it absolute", err)
			}
		})
	}
	g := mustParse(t, dir, "[paths]\nread_write = [\"w\"]\ndeny = [\"w/~/x\"]\nread_only = [\"./w/~\"]\n")
	if d := g.CheckPath(filepath.Join(dir, "w/~/x"), false); d.Allowed {
		t.Errorf("w/~/x is allowed, want it denied")
	}
}
