package broker_test

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/sandboxtest"
)

// At most MaxBackground works run at once, but a session keeps every work
// it ever started for background_command and Background(): what it keeps
// of each must be bounded, or a model that starts work after work (each
// ending at once) grows the broker's memory without end. Here: 32 works,
// each with a 2 MiB command, each ended; the session must not hold their
// commands (64 MiB) once they have ended.
func TestBackgroundFinishedWorkIsBounded(t *testing.T) {
	f := newFixture(t, grant.Limits{})
	s := f.open(t, sandboxtest.Native(t), nil)
	const works, size = 32, 2 << 20
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	for i := range works {
		cmd := "exit 0 #" + strings.Repeat(string(rune('a'+i%26)), size)
		b, _ := json.Marshal(map[string]any{"command": cmd, "run_in_background": true})
		res := call(t, s, "shell", string(b))
		if res.Class != broker.ClassOK {
			t.Fatalf("start %d: %s %q", i, res.Class, res.Output.Content)
		}
		// Let it end, so the next start has a place.
		id := res.Output.Meta.WorkID
		deadline := time.Now().Add(30 * time.Second)
		for workInfo(t, s, id).State == broker.WorkRunning && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	grew := int64(heap()) - int64(before)
	if len(s.Background()) != works {
		t.Fatalf("Background() lists %d works, want %d", len(s.Background()), works)
	}
	if grew > works*size/4 {
		t.Errorf("after %d ended works of %d-byte commands the broker's heap grew by %d bytes: it keeps each whole command", works, size, grew)
	}
	for _, w := range s.Background() {
		if len(w.Command) > 64<<10 {
			t.Fatalf("Background() lists a %d-byte command", len(w.Command))
		}
	}
}

// Nor may it keep the last 16 KiB of output of every work it ever ran: the
// tails of all but the most recent ended works are dropped (their log
// files keep the output).
func TestBackgroundEndedTailsAreBounded(t *testing.T) {
	f := newFixture(t, grant.Limits{})
	s := f.open(t, sandboxtest.Unsandboxed(t), nil)
	const works = 1500
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	before := heap()
	var first string
	for i := range works {
		b, _ := json.Marshal(map[string]any{"command": "head -c 20000 /dev/zero | tr '\\0' x", "run_in_background": true})
		res := call(t, s, "shell", string(b))
		if res.Class != broker.ClassOK {
			t.Fatalf("start %d: %s %q", i, res.Class, res.Output.Content)
		}
		id := res.Output.Meta.WorkID
		if i == 0 {
			first = id
		}
		if w := workCall(t, s, "wait", id, `,"wait_secs":30`); w.Output.Meta.WorkState != broker.WorkExited {
			t.Fatalf("work %d: %q", i, w.Output.Content)
		}
	}
	grew := int64(heap()) - int64(before)
	if most := int64(works * broker.TailBytes / 2); grew > most {
		t.Errorf("after %d ended works of 20000 bytes of output each the broker's heap grew by %d bytes (want at most %d): it keeps every tail", works, grew, most)
	}
	// The oldest the session keeps still answers, with its log; the
	// first, past the works a session keeps, is forgotten.
	st := workCall(t, s, "status", s.Background()[0].ID, "")
	if st.Output.Meta.WorkState != broker.WorkExited || !strings.Contains(st.Output.Content, "output: 20000 bytes") || !strings.Contains(st.Output.Content, "full log: ") {
		t.Errorf("status of the oldest work kept: %q", st.Output.Content)
	}
	if st := workCall(t, s, "status", first, ""); st.Class != broker.ClassRefused || !strings.Contains(st.Output.Content, "it ended long ago") {
		t.Errorf("status of the first work: %s %q", st.Class, st.Output.Content)
	}
}
