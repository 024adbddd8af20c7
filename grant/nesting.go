package grant

import (
	"fmt"
	"strings"
)

// maxNesting is how deep a grant may nest keys and values: table header
// parts, dotted key parts, inline tables and arrays, all counted together.
// A real grant needs four ([secrets.NAME] then hosts = [...]). The bound
// exists because the TOML library's cost grows with the square of the depth:
// 16 KB of inline tables 4,000 deep took it 28 s and 848 MB, and a dotted
// key of 8,000 parts 4 s, where a file of the same size at depth 64 takes
// milliseconds.
const maxNesting = 64

// checkNesting refuses doc, before it is decoded, when anything in it lies
// more than maxNesting levels deep, naming the line. It is a single pass
// that knows only enough TOML to skip strings and comments, and it errs
// towards counting too deep, never too shallow: every '.' outside a string
// or comment counts as a level (a float such as 1.5 counts too; no grant
// value is a float), until the statement or the inline-table entry ends.
func checkNesting(doc string) *Error {
	var (
		line   = 1
		header int   // levels set by the last [table] header
		stmt   int   // levels of the statement on the current line, outside brackets
		frames []int // per open [ or {: 1 + the dots of its current entry
		start  = true
	)
	depth := func() int {
		d := header + stmt
		for _, f := range frames {
			d += f
		}
		return d
	}
	refuse := func() *Error {
		return &Error{Line: line, Msg: fmt.Sprintf("nested more than %d levels deep (tables, dotted keys, inline tables and arrays together); a grant needs at most 4", maxNesting)}
	}
	for i := 0; i < len(doc); i++ {
		c := doc[i]
		switch c {
		case '\n':
			line++
			if len(frames) == 0 {
				stmt, start = 0, true
			}
			continue
		case ' ', '\t', '\r':
			continue
		case '#':
			for i+1 < len(doc) && doc[i+1] != '\n' {
				i++
			}
			continue
		case '"', '\'':
			end, nl := skipString(doc, i)
			line += nl
			i = end - 1
		case '[':
			if start && len(frames) == 0 { // a table header: its own depth, counted by its dots
				isArray := strings.HasPrefix(doc[i:], "[[")
				header, stmt = 1, 0
				if isArray {
					i++
				}
				for i+1 < len(doc) && doc[i+1] != ']' && doc[i+1] != '\n' {
					i++
					switch doc[i] {
					case '.':
						if header++; header > maxNesting {
							return refuse()
						}
					case '"', '\'':
						end, _ := skipString(doc, i)
						i = end - 1
					}
				}
				start = false
				continue
			}
			frames = append(frames, 1)
		case '{':
			frames = append(frames, 1)
		case ']', '}':
			if len(frames) > 0 {
				frames = frames[:len(frames)-1]
			}
		case ',':
			if len(frames) > 0 {
				frames[len(frames)-1] = 1
			}
		case '.':
			if len(frames) > 0 {
				frames[len(frames)-1]++
			} else {
				stmt++
			}
		}
		start = false
		if depth() > maxNesting {
			return refuse()
		}
	}
	return nil
}

// skipString returns the index just past the TOML string that starts at
// doc[i] (basic, literal, or either multi-line form) and how many line breaks
// it spans. A single-line string ends at a line break even unterminated (the
// decoder refuses that), so a stray quote never hides the rest of the file.
func skipString(doc string, i int) (end, newlines int) {
	q := doc[i]
	if strings.HasPrefix(doc[i:], strings.Repeat(string(q), 3)) { // multi-line
		delim := strings.Repeat(string(q), 3)
		for j := i + 3; j < len(doc); j++ {
			switch {
			case doc[j] == '\n':
				newlines++
			case q == '"' && doc[j] == '\\':
				if j+1 < len(doc) && doc[j+1] == '\n' {
					newlines++
				}
				j++
			case strings.HasPrefix(doc[j:], delim):
				j += 3
				for k := 0; k < 2 && j < len(doc) && doc[j] == q; k++ { // up to two quotes end the content
					j++
				}
				return j, newlines
			}
		}
		return len(doc), newlines
	}
	for j := i + 1; j < len(doc); j++ {
		switch {
		case doc[j] == '\n':
			return j, 0
		case q == '"' && doc[j] == '\\':
			if j+1 < len(doc) && doc[j+1] == '\n' {
				return j + 1, 0
			}
			j++
		case doc[j] == q:
			return j + 1, 0
		}
	}
	return len(doc), 0
}
