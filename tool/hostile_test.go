//go:build unix

package tool

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestSymlinkSwapRace swaps ws/t between a directory inside the root and one
// outside while file tools use ws/t/f (hostile case A4): the canary must
// never appear and the outside must not change.
func TestSymlinkSwapRace(t *testing.T) {
	w := newWorkspace(t)
	w.write(t, "real/f", "inside\n")
	w.write(t, "../outside/f", canary+"\n")
	link := filepath.Join(w.root, "t")
	mustSymlink(t, "real", link)
	var stop atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		tmp := filepath.Join(w.root, "t.tmp")
		for i := 0; !stop.Load(); i++ {
			target := "real"
			if i%2 == 1 {
				target = w.outside
			}
			os.Remove(tmp)
			if os.Symlink(target, tmp) == nil {
				os.Rename(tmp, link)
			}
		}
	}()
	calls := []struct{ tool, args string }{
		{"read_file", `{"path":"t/f"}`},
		{"grep", `{"pattern":".","path":"t","output_mode":"content"}`},
		{"grep", `{"pattern":".","path":"t/f","output_mode":"content"}`},
		{"glob", `{"pattern":"t/*"}`},
		{"write_file", `{"path":"t/f","content":"inside\n"}`},
		{"write_file", `{"path":"t/new","content":"x"}`},
		{"edit_file", `{"path":"t/f","old_string":"` + canary + `","new_string":"pwned"}`},
	}
	deadline := time.Now().Add(3 * time.Second)
	n := 0
	for ; n < 2000 && time.Now().Before(deadline); n++ {
		c := calls[n%len(calls)]
		out := call(t, w.env(), c.tool, c.args)
		noCanary(t, out)
		if strings.Contains(out.Content, w.outside) {
			t.Errorf("%s %s named a path outside: %s", c.tool, c.args, out.Content)
		}
	}
	stop.Store(true)
	<-done
	b, err := os.ReadFile(filepath.Join(w.outside, "f"))
	if err != nil || string(b) != canary+"\n" {
		t.Errorf("outside/f changed: %q, %v", b, err)
	}
	if _, err := os.Stat(filepath.Join(w.outside, "new")); err == nil {
		t.Error("outside/new was created")
	}
	t.Logf("%d calls", n)
}

// TestGrepAndGlobTraps: deep trees, a self-loop and a catastrophic pattern
// finish quickly with bounded output (hostile case A9).
func TestGrepAndGlobTraps(t *testing.T) {
	w := newWorkspace(t)
	mustSymlink(t, ".", filepath.Join(w.root, "loop"))
	deep := w.root
	for i := 0; i < maxWalkDepth+20; i++ {
		deep = filepath.Join(deep, "d")
	}
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	w.write(t, "aaa.txt", strings.Repeat("a", 1<<20))
	for _, c := range []struct{ tool, args, want string }{
		{"grep", `{"pattern":"(a+)+$","output_mode":"count"}`, fmt.Sprintf("directories deeper than %d levels not searched", maxWalkDepth)},
		{"grep", `{"pattern":"(a+)+$","output_mode":"content"}`, " [... line cut: "},
		{"glob", `{"pattern":"**/d"}`, fmt.Sprintf("directories deeper than %d levels not searched", maxWalkDepth)},
	} {
		start := time.Now()
		out := call(t, w.env(), c.tool, c.args)
		if el := time.Since(start); el > 5*time.Second {
			t.Errorf("%s %s took %v", c.tool, c.args, el)
		}
		if out.IsError || !strings.Contains(out.Content, c.want) || len(out.Content) > defaultOutputBytes+4096 {
			t.Errorf("%s %s: IsError=%v, %d bytes, want %q in:\n%.2000s", c.tool, c.args, out.IsError, len(out.Content), c.want, out.Content)
		}
	}
}
