package broker_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/sandboxtest"
)

// TestBackgroundThatCannotBeMarkedInFlightLeavesNoStartRecord: background
// work is marked in flight before it starts, and is not started when that
// mark cannot be written (a full disk: a new slot's first block). Its
// background-start record ("running") was written before the mark was
// tried, so work that never ran had a start record and never an end: the
// log said it was running for ever. Here the new slot cannot be made (a
// directory stands where it would go).
func TestBackgroundThatCannotBeMarkedInFlightLeavesNoStartRecord(t *testing.T) {
	f := newFixture(t, grant.Limits{})
	s := f.open(t, sandboxtest.Unsandboxed(t), nil)
	// The call takes slot-0; the work would take slot-1.
	if err := os.Mkdir(filepath.Join(f.records, audit.LiveDir, s.ID(), "slot-1.json"), 0o700); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]any{"command": "echo started", "run_in_background": true})
	res := call(t, s, "shell", string(b))
	if res.Output.Meta.WorkID != "" {
		t.Fatalf("the work started with no in-flight mark: %s %q", res.Class, res.Output.Content)
	}
	// Nor does it leave a log file: the session lists no such work, and
	// nothing would ever remove it.
	if ents, _ := os.ReadDir(filepath.Join(s.Dir(), "background")); len(ents) > 0 {
		t.Errorf("a work that never started left %d files in the session's background directory (%s)", len(ents), ents[0].Name())
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	starts, ends := map[string]bool{}, map[string]bool{}
	for _, r := range records(t, f.records) {
		switch r.Kind {
		case audit.KindBackgroundStart:
			starts[r.WorkID] = true
		case audit.KindBackgroundEnd:
			ends[r.WorkID] = true
		}
	}
	for id := range starts {
		if !ends[id] {
			t.Errorf("work %s has a background-start record and no end: the log says it runs, and it never ran", id)
		}
	}
}
