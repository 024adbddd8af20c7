package tool

import (
	"fmt"
	"strings"
)

// unifiedDiff returns a unified diff (3 lines of context) from old to new
// of the file shown as name, or "" when they are equal. Lines are compared
// whole; the common start and end are trimmed first, and the rest is
// aligned by a longest common subsequence when it is small enough
// (maxDiffCells), otherwise shown as one replaced block: always a correct
// diff, at worst a coarse one.
func unifiedDiff(name string, old, new []byte) string {
	a, b := splitLines(string(old)), splitLines(string(new))
	ops := diffLines(a, b)
	if len(ops) == 0 {
		return ""
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "--- %s\n+++ %s\n", name, name)
	const context = 3
	// Group the edit script into hunks: runs of changes with at most
	// 2*context equal lines between them.
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
		fmt.Fprintf(&sb, "@@ -%s +%s @@\n", hunkRange(aStart, aLen), hunkRange(bStart, bLen))
		for _, op := range ops[start:end] {
			sb.WriteByte(op.kind)
			sb.WriteString(op.text)
			if !strings.HasSuffix(op.text, "\n") {
				sb.WriteString("\n\\ No newline at end of file\n")
			}
		}
		i = end
	}
	return sb.String()
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
