package tool

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// FuzzUnifiedDiff: for any two texts, the diff turns the old into the new
// (applied by applyDiff, a strict reader of the hunks unifiedDiff writes),
// equal texts give none, and the capped diff is the whole one cut at a
// line. `go test -run '^$' -fuzz FuzzUnifiedDiff ./tool` runs it longer.
func FuzzUnifiedDiff(f *testing.F) {
	f.Add("a\nb\nc\n", "a\nB\nc\n", 40)
	f.Add("", "x", 1)
	f.Add("x", "", 100)
	f.Add("1\n2\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\n3\n4\nfive\n6\n7\n8\n9", 7)
	f.Add("a\n\n\nb", "a\n\nb\n", 3)
	f.Fuzz(func(t *testing.T, old, new string, limit int) {
		d := unifiedDiff("f", []byte(old), []byte(new))
		if (d == "") != (old == new) {
			t.Fatalf("diff %q for %q -> %q", d, old, new)
		}
		if d == "" {
			return
		}
		got, err := applyDiff(old, d)
		if err != nil {
			t.Fatalf("%v\nold %q\nnew %q\ndiff\n%s", err, old, new, d)
		}
		if got != new {
			t.Fatalf("applied %q, want %q\ndiff\n%s", got, new, d)
		}
		limit = 1 + abs(limit)%(2*len(d)+1)
		want := d
		if len(d) > limit {
			c := strings.LastIndexByte(d[:limit], '\n') + 1
			want = d[:c] + fmt.Sprintf("[diff cut: %d more bytes]\n", len(d)-c)
		}
		if got := cappedDiff("f", []byte(old), []byte(new), limit); got != want {
			t.Fatalf("capped at %d:\n%q\nwant\n%q", limit, got, want)
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// applyDiff applies a diff as unifiedDiff writes it to old: a header,
// then hunks whose lines are ' ', '-' or '+' and their text, each line's
// newline dropped where "\ No newline at end of file" follows it. Every
// context and removed line must match old where its hunk says.
func applyDiff(old, d string) (string, error) {
	lines := strings.SplitAfter(d, "\n")
	if len(lines) < 3 || lines[0] != "--- f\n" || lines[1] != "+++ f\n" {
		return "", fmt.Errorf("no header")
	}
	src := splitLines(old)
	var out strings.Builder
	at := 0 // the next old line to copy
	for i := 2; i < len(lines) && lines[i] != ""; {
		h := lines[i]
		var oldRange string
		if _, err := fmt.Sscanf(h, "@@ -%s +", &oldRange); err != nil || !strings.HasPrefix(h, "@@ -") {
			return "", fmt.Errorf("line %d: want a hunk header, got %q", i, h)
		}
		start, n, err := parseRange(oldRange)
		if err != nil {
			return "", err
		}
		first := start - 1 // 0-based
		if n == 0 {
			first = start
		}
		if first < at || first > len(src) {
			return "", fmt.Errorf("hunk %q starts at line %d, the copy is at %d of %d", h, first, at, len(src))
		}
		for ; at < first; at++ {
			out.WriteString(src[at])
		}
		for i++; i < len(lines) && lines[i] != "" && !strings.HasPrefix(lines[i], "@@ "); i++ {
			l := lines[i]
			text := l[1:]
			if i+1 < len(lines) && lines[i+1] == "\\ No newline at end of file\n" {
				text = strings.TrimSuffix(text, "\n")
				i++
			}
			switch l[0] {
			case ' ', '-':
				if at >= len(src) || src[at] != text {
					return "", fmt.Errorf("line %d of old is not %q", at+1, text)
				}
				if l[0] == ' ' {
					out.WriteString(text)
				}
				at++
			case '+':
				out.WriteString(text)
			default:
				return "", fmt.Errorf("a hunk line %q", l)
			}
		}
	}
	for ; at < len(src); at++ {
		out.WriteString(src[at])
	}
	return out.String(), nil
}

// parseRange reads a hunk range "S" (one line) or "S,N".
func parseRange(r string) (start, n int, err error) {
	s, c, ok := strings.Cut(r, ",")
	n = 1
	if ok {
		if n, err = strconv.Atoi(c); err != nil {
			return 0, 0, err
		}
	}
	start, err = strconv.Atoi(s)
	return start, n, err
}
