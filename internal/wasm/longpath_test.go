package wasm

import (
	"strings"
	"testing"
	"time"
)

// TestLongPathIsRefusedBeforeTheDeadline checks that a path longer than
// the host's PATH_MAX is refused at once (ENAMETOOLONG), as the kernel
// refuses it to a sandboxed command. The work a host function does is not
// stopped at the run's deadline (wazero stops a module only between its
// own instructions), and resolving a path component by component for the
// grant took time quadratic in its length: one open of a 2 MB path of
// "a/" kept the broker busy, past a 1 s limit, for minutes.
func TestLongPathIsRefusedBeforeTheDeadline(t *testing.T) {
	m := probe(t)
	granted, _ := world(t)
	cfg := Config{Dirs: []Dir{{Host: granted, Guest: granted, Grant: testGrant(t, granted, "[paths]\nread_write = [\".\"]\n")}}, Time: 10 * time.Second}
	done := make(chan string, 1)
	go func() {
		out, _ := run(t, m, cfg, "longpath", granted, "1000000")
		done <- out
	}()
	select {
	case out := <-done:
		if !strings.HasSuffix(strings.ToLower(out), "file name too long\n") {
			t.Errorf("the open of a 2 MB path: %q, want ENAMETOOLONG", out[max(0, len(out)-200):])
		}
	case <-time.After(90 * time.Second):
		t.Fatal("a run with a 10 s limit was still in one path_open after 90 s")
	}
}
