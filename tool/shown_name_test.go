//go:build unix

package tool

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestHostileNamesCannotForgeResultLines: a file name holding a newline,
// a carriage return, an escape sequence or a bidi override cannot make
// glob or grep print a line that is not one of their results (a path
// that does not exist, a forged "path:line:text" match): one result is
// one line, and a name that is not plain text is shown quoted.
func TestHostileNamesCannotForgeResultLines(t *testing.T) {
	w := newWorkspace(t)
	forged := filepath.Join(w.root, "forged.go")
	names := []string{
		"a.go\n" + forged,                   // a path of its own line
		"b.go\n" + forged + ":1:password=x", // a grep match of its own line
		"c\r" + "d.go",                      // a carriage return overwriting the line
		"e\x1b[2Jf.go",                      // a terminal escape
		"g\u202eog.h",                       // a bidi override: shows as "g" + "h.go"
	}
	for _, n := range names {
		w.write(t, n, "password\n")
	}
	for _, c := range []struct{ tool, args string }{
		{"glob", `{"pattern":"*"}`},
		{"grep", `{"pattern":"password"}`},
		{"grep", `{"pattern":"password","output_mode":"content"}`},
		{"grep", `{"pattern":"password","output_mode":"count"}`},
	} {
		out := call(t, w.env(), c.tool, c.args)
		for _, line := range strings.Split(out.Content, "\n") {
			if strings.HasPrefix(line, forged) {
				t.Errorf("%s %s: a line names %s, which does not exist:\n%s", c.tool, c.args, forged, out.Content)
			}
			if strings.ContainsAny(line, "\r\x1b\u202e") {
				t.Errorf("%s %s: a line holds a control character: %q", c.tool, c.args, line)
			}
		}
	}
}
