package wasm

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/wire"
)

// TestReaddirCannotListPastTheModulesMemory: fd_readdir reads no more of a
// directory into the broker than the module's memory could take. wazero
// sizes what it reads by the buffer length the module gives, never checked
// against its memory before the listing is read and kept for the
// descriptor: a module of a few pages, passing a length of 4 GiB on each
// of many descriptors of one large directory, had the broker read and
// hold the whole directory once per descriptor, past its memory limit;
// and with a real buffer, within its memory, it still could have the
// directory held once per descriptor.
func TestReaddirCannotListPastTheModulesMemory(t *testing.T) {
	m := probe(t)
	granted, _ := world(t)
	big := filepath.Join(granted, "big")
	if err := os.Mkdir(big, 0o755); err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("x", 200)
	const entries = 20000
	for i := range entries {
		f, err := os.Create(filepath.Join(big, fmt.Sprintf("%s%06d", pad, i)))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"past its memory", nil, "readdir map[21:40]"},
		{"within its memory", []string{fmt.Sprint(6 << 20)}, "readdir map[0:"},
	} {
		t.Run(tc.name, func(t *testing.T) { readdirHeld(t, m, granted, big, entries, tc.args, tc.want) })
	}
}

func readdirHeld(t *testing.T, m *Module, granted, big string, entries int, extra []string, want string) {
	var before, during runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	tools := func(ctx context.Context, tool string, args json.RawMessage) wire.ToolOutput {
		runtime.GC()
		runtime.ReadMemStats(&during)
		return wire.ToolOutput{Content: "measured"}
	}
	cfg := Config{Dirs: []Dir{{Host: granted, Guest: granted, ReadOnly: true}}, Tools: tools, Memory: 16 << 20}
	out, _ := run(t, m, cfg, append([]string{"readdirbuf", big, "40", "measure"}, extra...)...)
	if !strings.Contains(out, "tool measured") {
		t.Fatalf("readdirbuf: %q", out)
	}
	if !strings.Contains(out, want) {
		t.Errorf("fd_readdir: %q, want %q", out, want)
	}
	if grew := int64(during.HeapAlloc) - int64(before.HeapAlloc); grew > 64<<20 {
		t.Errorf("the broker's heap grew by %d MiB while a module under a 16 MiB limit held 40 listings of a directory of %d entries: %q", grew>>20, entries, out)
	}
}
