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

func TestUnifiedDiff(t *testing.T) {
	tests := []struct{ name, old, new, want string }{
		{"equal", "a\nb\n", "a\nb\n", ""},
		{"one line", "a\nb\nc\n", "a\nB\nc\n", "--- f\n+++ f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"},
		{"to empty", "a\n", "", "--- f\n+++ f\n@@ -1 +0,0 @@\n-a\n"},
		{"from empty", "", "a\n", "--- f\n+++ f\n@@ -0,0 +1 @@\n+a\n"},
		{"no newline", "a", "b", "--- f\n+++ f\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+b\n\\ No newline at end of file\n"},
		{"two hunks", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n", "one\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\ntwelve\n",
			"--- f\n+++ f\n@@ -1,4 +1,4 @@\n-1\n+one\n 2\n 3\n 4\n@@ -9,4 +9,4 @@\n 9\n 10\n 11\n-12\n+twelve\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := unifiedDiff("f", []byte(tt.old), []byte(tt.new)); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// TestUnifiedDiffApplies: for random edits, patch(1) turns the old text
// into the new one with the diff.
func TestUnifiedDiffApplies(t *testing.T) {
	patch, err := exec.LookPath("patch")
	if err != nil {
		t.Skip("no patch(1) here")
	}
	r := rand.New(rand.NewSource(1))
	dir := t.TempDir()
	for n := 0; n < 200; n++ {
		var a []string
		for i := r.Intn(30); i > 0; i-- {
			a = append(a, fmt.Sprintf("l%d\n", r.Intn(8)))
		}
		b := append([]string(nil), a...)
		for k := r.Intn(5); k > 0; k-- {
			i := r.Intn(len(b) + 1)
			switch r.Intn(3) {
			case 0:
				b = append(b[:i], append([]string{fmt.Sprintf("new%d\n", r.Intn(100))}, b[i:]...)...)
			case 1:
				if i < len(b) {
					b = append(b[:i], b[i+1:]...)
				}
			default:
				if i < len(b) {
					b[i] = "changed\n"
				}
			}
		}
		old, new := strings.Join(a, ""), strings.Join(b, "")
		d := unifiedDiff("f", []byte(old), []byte(new))
		if old == new {
			if d != "" {
				t.Fatalf("equal texts gave a diff: %q", d)
			}
			continue
		}
		f := filepath.Join(dir, "f")
		os.WriteFile(f, []byte(old), 0o644)
		os.WriteFile(f+".diff", []byte(d), 0o644)
		cmd := exec.Command(patch, "-s", "-F0", "-i", f+".diff", f)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("patch failed: %v %s\nold %q\nnew %q\ndiff\n%s", err, out, old, new, d)
		}
		if got, _ := os.ReadFile(f); string(got) != new {
			t.Fatalf("patched %q, want %q\ndiff\n%s", got, new, d)
		}
	}
}
