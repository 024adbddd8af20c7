package tool

import (
	"strconv"
	"strings"
)

// shownName is how glob and grep print a path they found, one a line:
// as it is when it is plain text, else quoted as a Go string literal
// ("a\nb", "\x1b[2J", "\u202e"). A file's name is the file system's, not
// the model's: one holding a newline would otherwise print as two
// results (a path that does not exist, a forged "path:line:text" match),
// and a carriage return, an escape sequence or a bidi override would
// change what the line seems to say. A quoted path is also valid JSON
// text, so the model can pass it back as it is shown.
func shownName(p string) string {
	if !strings.ContainsFunc(p, func(r rune) bool { return r != ' ' && !strconv.IsPrint(r) }) {
		return p
	}
	return strconv.Quote(p)
}
