package tool

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"
)

// unifiedDiff returns a unified diff (3 lines of context) from old to new
// of the file shown as name, or "" when they are equal. Lines are compared
// whole; the common start and end are trimmed first, and the rest is
// aligned by a longest common subsequence when it is small enough
// (maxDiffCells, maxDiffLines), otherwise shown as one replaced block:
// always a correct diff, at worst a coarse one.
func unifiedDiff(name string, old, new []byte) string {
	o := diffOut{keep: -1}
	writeDiff(&o, name, old, new)
	return o.b.String()
}

// cappedDiff is unifiedDiff cut at limit bytes, on a line, saying how much
// was cut. It keeps only what it shows: its memory grows with the bytes of
// the files, never with their number of lines, and the diff past the cut
// is counted, not built.
func cappedDiff(name string, old, new []byte, limit int) string {
	return cutDiff(name, old, new, limit, func(_ rune, size int) int { return size })
}

// cutDiff is unifiedDiff cut on a line where what it shows would cost more
// than limit, each character costing cost(r, size) (at least its size),
// saying how many bytes were cut.
func cutDiff(name string, old, new []byte, limit int, cost func(r rune, size int) int) string {
	o := diffOut{keep: limit}
	writeDiff(&o, name, old, new)
	d := o.b.String()
	end, spent := 0, 0
	for end < len(d) {
		r, size := utf8.DecodeRuneInString(d[end:])
		if spent += cost(r, size); spent > limit {
			break
		}
		end += size
	}
	if end == len(d) && o.total <= int64(limit) {
		return d
	}
	cut := strings.LastIndexByte(d[:end], '\n') + 1
	return d[:cut] + fmt.Sprintf("[diff cut: %d more bytes]\n", o.total-int64(cut))
}

// jsonCost is at least what r (of size bytes in its text) costs in a JSON
// string, whichever encoder writes it: two bytes for the short escapes,
// six for \u00XX, for the line and paragraph separators, for '<', '>' and
// '&' (encoding/json's default escapes them for HTML) and for a byte that
// is not UTF-8 (written as \ufffd).
func jsonCost(r rune, size int) int {
	switch {
	case r == utf8.RuneError && size == 1:
		return 6
	case r == '"' || r == '\\' || r == '\n' || r == '\r' || r == '\t' || r == '\b' || r == '\f':
		return 2
	case r < 0x20 || r == '\u2028' || r == '\u2029' || r == '<' || r == '>' || r == '&':
		return 6
	}
	return size
}

// diffOut collects a diff: its first keep bytes (all when keep < 0) and
// the length of the whole.
type diffOut struct {
	b     strings.Builder
	keep  int
	total int64
}

func (o *diffOut) WriteString(s string) {
	o.total += int64(len(s))
	switch room := o.keep - o.b.Len(); {
	case o.keep < 0:
		o.b.WriteString(s)
	case room > 0:
		o.b.WriteString(s[:min(len(s), room)])
	}
}

func (o *diffOut) Write(p []byte) {
	o.total += int64(len(p))
	switch room := o.keep - o.b.Len(); {
	case o.keep < 0:
		o.b.Write(p)
	case room > 0:
		o.b.Write(p[:min(len(p), room)])
	}
}

// line writes one line of a hunk: its kind, its text, and the note a last
// line without a newline gets.
func (o *diffOut) line(kind byte, text []byte) {
	o.Write([]byte{kind})
	o.Write(text)
	if len(text) == 0 || text[len(text)-1] != '\n' {
		o.WriteString("\n\\ No newline at end of file\n")
	}
}

// diffContext is the number of unchanged lines shown around a change.
const diffContext = 3

// maxDiffLines bounds the lines of a changed middle aligned line by line;
// a larger one is shown as one replaced block, written from the bytes, so
// a file of many short lines costs its bytes and not a slice entry, a
// string and an edit operation for each of its lines.
const maxDiffLines = 1 << 16

// writeDiff writes the diff from old to new to o. The common start and end
// are found on the bytes, so only the changed middle and its context are
// ever split into lines.
func writeDiff(o *diffOut, name string, old, new []byte) {
	if bytes.Equal(old, new) {
		return
	}
	// The common start, back to the start of its line.
	p := 0
	for p < len(old) && p < len(new) && old[p] == new[p] {
		p++
	}
	p = bytes.LastIndexByte(old[:p], '\n') + 1
	// The common end, forward to the start of a line in both.
	s := 0
	for s < len(old)-p && s < len(new)-p && old[len(old)-1-s] == new[len(new)-1-s] {
		s++
	}
	lineStart := func(b []byte, i int) bool { return i == p || b[i-1] == '\n' }
	for s > 0 && !(lineStart(old, len(old)-s) && lineStart(new, len(new)-s)) {
		s--
	}
	midA, midB := old[p:len(old)-s], new[p:len(new)-s]
	// Up to diffContext lines of context on each side.
	before := p
	for k := 0; k < diffContext && before > 0; k++ {
		before = bytes.LastIndexByte(old[:before-1], '\n') + 1
	}
	after := len(old) - s // in old; the same bytes end new
	for k := 0; k < diffContext && after < len(old); k++ {
		after = lineEnd(old, after) + 1
	}
	after = min(after, len(old))
	tail := len(old) - after                         // bytes after the context, the same in both
	first := bytes.Count(old[:before], []byte{'\n'}) // 0-based line of the window's start

	o.WriteString("--- " + name + "\n+++ " + name + "\n")
	la, lb := countLines(midA), countLines(midB)
	if la > 0 && lb > 0 && la+lb <= maxDiffLines && la*lb <= maxDiffCells {
		a := splitLines(string(old[before:after]))
		b := splitLines(string(new[before : len(new)-tail]))
		writeHunks(o, diffLines(a, b), first)
		return
	}
	// One replaced block: its context, every old line removed, every new
	// line added.
	ctxA, ctxB := old[before:p], old[len(old)-s:after]
	nc := countLines(ctxA) + countLines(ctxB)
	o.WriteString(fmt.Sprintf("@@ -%s +%s @@\n", hunkRange(first, nc+la), hunkRange(first, nc+lb)))
	for _, part := range []struct {
		kind byte
		text []byte
	}{{' ', ctxA}, {'-', midA}, {'+', midB}, {' ', ctxB}} {
		for b := part.text; len(b) > 0; {
			end := min(lineEnd(b, 0)+1, len(b))
			o.line(part.kind, b[:end])
			b = b[end:]
		}
	}
}

// countLines is the number of lines in b (the last may lack its newline).
func countLines(b []byte) int {
	n := bytes.Count(b, []byte{'\n'})
	if len(b) > 0 && b[len(b)-1] != '\n' {
		n++
	}
	return n
}

// writeHunks groups the edit script ops into hunks (runs of changes with at
// most 2*diffContext equal lines between them) and writes them; off is the
// line of the file where ops start.
func writeHunks(o *diffOut, ops []diffOp, off int) {
	const context = diffContext
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			continue
		}
		start := max(i-context, 0)
		for start < i && ops[start].kind != ' ' {
			start++
		}
		end := i
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*context {
				end = min(end+context, run)
				break
			}
			end = run
		}
		aStart, bStart := ops[start].a, ops[start].b
		var aLen, bLen int
		for _, op := range ops[start:end] {
			if op.kind != '+' {
				aLen++
			}
			if op.kind != '-' {
				bLen++
			}
		}
		o.WriteString(fmt.Sprintf("@@ -%s +%s @@\n", hunkRange(off+aStart, aLen), hunkRange(off+bStart, bLen)))
		for _, op := range ops[start:end] {
			o.line(op.kind, []byte(op.text))
		}
		i = end
	}
}

// hunkRange is a unified diff range: 1-based start and length, "start"
// alone for one line, "start-1,0" for none.
func hunkRange(start, n int) string {
	switch n {
	case 0:
		return fmt.Sprintf("%d,0", start)
	case 1:
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

// splitLines splits s after each newline; the last line may lack one.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// diffOp is one line of an edit script: ' ' kept, '-' removed, '+' added;
// a and b are its 0-based positions in the old and new lines (for '+' and
// '-', where the line would be).
type diffOp struct {
	kind byte
	text string
	a, b int
}

// maxDiffCells bounds the LCS table (old × new lines of the changed middle).
const maxDiffCells = 4 << 20

// diffLines returns an edit script from a to b, or nil when they are equal.
func diffLines(a, b []string) []diffOp {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	if pre == len(a) && pre == len(b) {
		return nil
	}
	var ops []diffOp
	for i := 0; i < pre; i++ {
		ops = append(ops, diffOp{' ', a[i], i, i})
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	ops = append(ops, middle(ma, mb, pre)...)
	for i := 0; i < suf; i++ {
		ia, ib := len(a)-suf+i, len(b)-suf+i
		ops = append(ops, diffOp{' ', a[ia], ia, ib})
	}
	return ops
}

// middle aligns the changed middle of two files, which starts at line off
// of both.
func middle(a, b []string, off int) []diffOp {
	var ops []diffOp
	if len(a)*len(b) > maxDiffCells {
		for i, l := range a {
			ops = append(ops, diffOp{'-', l, off + i, off})
		}
		for j, l := range b {
			ops = append(ops, diffOp{'+', l, off + len(a), off + j})
		}
		return ops
	}
	// lcs[i][j] is the LCS length of a[i:] and b[j:].
	lcs := make([][]int32, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int32, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			ops = append(ops, diffOp{' ', a[i], off + i, off + j})
			i, j = i+1, j+1
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, diffOp{'-', a[i], off + i, off + j})
			i++
		default:
			ops = append(ops, diffOp{'+', b[j], off + i, off + j})
			j++
		}
	}
	return ops
}
