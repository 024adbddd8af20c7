package wasm

import (
	"context"
	"encoding/json"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/wire"
)

// TestRenumberCannotGrowTheHostsTable: fd_renumber (dup2's WASI form) to a
// huge descriptor number takes no memory of the broker's. wazero's keeps
// a run's descriptors in a table indexed by number and grew it to the
// target: one call moving a file to descriptor 2^27 made the broker hold
// a gigabyte (2^31, sixteen) past the module's memory limit, for as long as
// the run lived.
func TestRenumberCannotGrowTheHostsTable(t *testing.T) {
	m := probe(t)
	granted, _ := world(t)
	var before, during runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	tools := func(ctx context.Context, tool string, args json.RawMessage) wire.ToolOutput {
		runtime.ReadMemStats(&during)
		return wire.ToolOutput{Content: "measured"}
	}
	cfg := Config{Dirs: []Dir{{Host: granted, Guest: granted, ReadOnly: true}}, Tools: tools, Memory: 64 << 20}
	out, _ := run(t, m, cfg, "renumber", filepath.Join(granted, "file.txt"), strconv.Itoa(1<<27), "measure")
	if !strings.Contains(out, "tool measured") {
		t.Fatalf("renumber: %q", out)
	}
	if !strings.Contains(out, "renumber 58\n") {
		t.Errorf("fd_renumber to descriptor 2^27: %q, want refused with ENOTSUP (58)", out)
	}
	if grew := int64(during.HeapAlloc) - int64(before.HeapAlloc); grew > 256<<20 {
		t.Errorf("the broker's heap grew by %d MiB while a module under a 64 MiB limit ran, after it renumbered a file to descriptor 2^27: %q", grew>>20, out)
	}
}
