package broker_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/sandboxtest"
)

// What a session keeps of each ended work is bounded (its command
// abridged, its tail dropped, its log removed past BackgroundLogsKept),
// but it kept every work it ever started: a model that starts work after
// work (each ending at once, with no output) grew the broker's memory by
// some 6 KB a work and the records' background directory by one file a
// work, without end, whatever the grant's limits. Here: a session that has
// started twice as many works holds no more than it did at half of them.
func TestBackgroundEndedWorksAreBounded(t *testing.T) {
	f := newFixture(t, grant.Limits{})
	s := f.open(t, sandboxtest.Unsandboxed(t), nil)
	heap := func() int64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	logs := func() int {
		ents, err := os.ReadDir(filepath.Join(s.Dir(), "background"))
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	// A command of 4 KiB, what a work's record keeps of it whole.
	b, _ := json.Marshal(map[string]any{"command": "exit 0 #" + strings.Repeat("ab", 2040), "run_in_background": true})
	start := func(n int) {
		for i := range n {
			res := call(t, s, "shell", string(b))
			if res.Class != broker.ClassOK {
				t.Fatalf("start %d: %s %q", i, res.Class, res.Output.Content)
			}
			if w := workCall(t, s, "wait", res.Output.Meta.WorkID, `,"wait_secs":30`); w.Output.Meta.WorkState != broker.WorkExited {
				t.Fatalf("work %d: %q", i, w.Output.Content)
			}
		}
	}
	const half = 1500
	before := heap()
	start(half)
	atHalf, logsAtHalf, listedAtHalf := heap(), logs(), len(s.Background())
	start(half)
	grewFirst, grewSecond := atHalf-before, heap()-atHalf
	t.Logf("heap: +%d bytes over the first %d works, +%d over the next %d; logs: %d then %d; listed: %d then %d",
		grewFirst, half, grewSecond, half, logsAtHalf, logs(), listedAtHalf, len(s.Background()))
	if grewSecond > grewFirst/4 {
		t.Errorf("the broker's heap grew by %d bytes over %d works, then by %d over %d more: it keeps every ended work", grewFirst, half, grewSecond, half)
	}
	if n := logs(); n > logsAtHalf {
		t.Errorf("the session's background directory holds %d files after %d works, %d after %d: one per work it ever started", logsAtHalf, half, n, 2*half)
	}
	if n := len(s.Background()); n > listedAtHalf {
		t.Errorf("Background() lists %d works after %d, %d after %d", listedAtHalf, half, n, 2*half)
	}
}
