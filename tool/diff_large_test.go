package tool

import (
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnifiedDiffLargeApplies: diffs whose changed middle is too large to
// align line by line (one replaced block, written from the bytes) still
// turn the old text into the new one with patch(1), newline-less last
// lines included.
func TestUnifiedDiffLargeApplies(t *testing.T) {
	patch, err := exec.LookPath("patch")
	if err != nil {
		t.Skip("no patch(1) here")
	}
	dir := t.TempDir()
	many := strings.Repeat("x\n", maxDiffLines)
	for _, c := range []struct{ name, old, new string }{
		{"every line", many, strings.ReplaceAll(many, "x", "y")},
		{"both ends", "a\nb\nc\nd\n" + many + "e\nf\ng\n", "a\nb\nc\nD\n" + many + "E\nf\ng\n"},
		{"insertion", "a\nb\nc\nd\ne\n", "a\nb\nc\n" + many + "d\ne\n"},
		{"deletion", "a\nb\nc\n" + many + "d\ne\n", "a\nb\nc\nd\ne\n"},
		{"no newline", "a\nb\n" + many + "c", "a\nb\n" + strings.ReplaceAll(many, "x", "z") + "c"},
		{"no newline changed", "a\nb\n" + many + "c", "a\nb\n" + many + "C"},
		{"to empty", many, ""},
		{"from empty", "", many + "tail"},
	} {
		d := unifiedDiff("f", []byte(c.old), []byte(c.new))
		f := filepath.Join(dir, "f")
		os.WriteFile(f, []byte(c.old), 0o644)
		os.WriteFile(f+".diff", []byte(d), 0o644)
		cmd := exec.Command(patch, "-s", "-F0", "-i", f+".diff", f)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("%s: patch failed: %v %s\ndiff starts\n%.500s", c.name, err, out, d)
			continue
		}
		if got, _ := os.ReadFile(f); string(got) != c.new {
			t.Errorf("%s: patched text differs from the new one; diff starts\n%.500s", c.name, d)
		}
	}
}

// TestCappedDiffIsTheCutDiff: the capped diff is the whole diff cut at a
// line, with the count of what was cut, as cutting the whole one would be.
func TestCappedDiffIsTheCutDiff(t *testing.T) {
	cut := func(d string, limit int) string {
		if len(d) <= limit {
			return d
		}
		c := strings.LastIndexByte(d[:limit], '\n') + 1
		return d[:c] + fmt.Sprintf("[diff cut: %d more bytes]\n", len(d)-c)
	}
	r := rand.New(rand.NewSource(2))
	for n := 0; n < 300; n++ {
		var a []string
		for i := r.Intn(60); i > 0; i-- {
			a = append(a, fmt.Sprintf("line %d\n", r.Intn(10)))
		}
		b := append([]string(nil), a...)
		for k := r.Intn(6); k > 0 && len(b) > 0; k-- {
			b[r.Intn(len(b))] = "changed\n"
		}
		old, new := strings.Join(a, ""), strings.Join(b, "")
		if r.Intn(3) == 0 {
			new += "end"
		}
		limit := 1 + r.Intn(400)
		want := cut(unifiedDiff("f", []byte(old), []byte(new)), limit)
		if got := cappedDiff("f", []byte(old), []byte(new), limit); got != want {
			t.Fatalf("limit %d: got\n%s\nwant\n%s", limit, got, want)
		}
	}
}
