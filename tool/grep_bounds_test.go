package tool

import (
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestGrepHugeHeadLimit: a head_limit too large to matter (the largest
// int) keeps every match, as no head_limit does; head_limit+1 must not
// wrap to a negative bound that keeps one match per file and says
// nothing of the rest.
func TestGrepHugeHeadLimit(t *testing.T) {
	w := newWorkspace(t)
	w.write(t, "m.txt", "match 1\nmatch 2\nmatch 3\n")
	want := call(t, w.env(), "grep", `{"pattern":"match","path":"m.txt","output_mode":"content"}`)
	for _, n := range []int{math.MaxInt, math.MaxInt - 1, math.MaxInt32} {
		got := call(t, w.env(), "grep", fmt.Sprintf(`{"pattern":"match","path":"m.txt","output_mode":"content","head_limit":%d}`, n))
		if got.IsError || got.Content != want.Content || got.Meta.Count != 3 {
			t.Errorf("head_limit %d: got %q (count %d), want %q", n, got.Content, got.Meta.Count, want.Content)
		}
	}
	if got := call(t, w.env(), "grep", `{"pattern":"match","path":"m.txt","output_mode":"content","head_limit":2}`); strings.Count(got.Content, "match ") != 2 || !got.Truncated {
		t.Errorf("head_limit 2: %q truncated=%v", got.Content, got.Truncated)
	}
}

// TestGrepReadAheadIsBounded: while a slow file is searched, the files
// after it in the walk's order are searched ahead, and their rendered
// matches wait for it. Those must not hold hundreds of output caps: 255
// small files whose every short line matches, under a long directory
// path, render a full output cap each.
func TestGrepReadAheadIsBounded(t *testing.T) {
	w := newWorkspace(t)
	w.write(t, "000/big.txt", strings.Repeat("bbbbbbbbbbbbbbb\n", (grepMaxFileBytes>>4)-1))
	dir := strings.Repeat("p", 200) + "/" + strings.Repeat("q", 200) + "/" + strings.Repeat("r", 200)
	for i := range 255 {
		w.write(t, fmt.Sprintf("%s/f%03d", dir, i), strings.Repeat("a\n", 20000))
	}
	// Collect often, so the heap follows what is live, not its garbage.
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak atomic.Uint64
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		var m runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peak.Load() {
				peak.Store(m.HeapInuse)
			}
		}
	}()
	out := call(t, w.env(), "grep", `{"pattern":"a|q","output_mode":"content"}`)
	close(stop)
	<-done
	if !out.Truncated || !strings.Contains(out.Content, "/f000:1:a") {
		t.Errorf("want the first small file's matches and a cut; truncated=%v, ends %.200q", out.Truncated, out.Content[max(0, len(out.Content)-200):])
	}
	// The slow file's own buffer (32 MiB) and some output caps (read ahead,
	// and garbage not yet collected); unbounded, 255 caps were held.
	if got, limit := peak.Load()-min(peak.Load(), base.HeapInuse), uint64(grepMaxFileBytes+64*defaultOutputBytes); got > limit {
		t.Errorf("grep's heap peaked %d MiB above where it started, want at most %d MiB", got>>20, limit>>20)
	}
}
