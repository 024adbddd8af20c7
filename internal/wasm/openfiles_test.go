package wasm

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/wire"
)

// TestModuleCannotTakeTheBrokersFileDescriptors checks that a module's
// open files are bounded: every file a module opens is a descriptor of the
// broker's own process, which every session of it shares. Before, a module
// opening one granted file in a loop held every descriptor the process may
// have (about 20,000 here), and the broker's own open, made while the run
// went on (the tool call a capsule makes, an audit record of another
// session), failed with "too many open files".
func TestModuleCannotTakeTheBrokersFileDescriptors(t *testing.T) {
	m := probe(t)
	granted, _ := world(t)
	var hostErr error
	tools := func(ctx context.Context, tool string, args json.RawMessage) wire.ToolOutput {
		f, err := os.Open(filepath.Join(granted, "file.txt"))
		if err != nil {
			hostErr = err
			return wire.ToolOutput{Content: err.Error(), IsError: true}
		}
		f.Close()
		return wire.ToolOutput{Content: "host ok"}
	}
	cfg := Config{Dirs: []Dir{{Host: granted, Guest: granted, ReadOnly: true}}, Tools: tools}
	out, _ := run(t, m, cfg, "fds", filepath.Join(granted, "file.txt"), "check")
	if hostErr != nil {
		t.Errorf("the broker could not open a file while the module held its files: %v (module: %q)", hostErr, out)
	}
	if !strings.Contains(out, "tool host ok") {
		t.Errorf("the module's tool call: %q", out)
	}
	if !strings.HasPrefix(out, "opened ") {
		t.Fatalf("fds: %q", out)
	}
	var n int
	if f := strings.Fields(out); len(f) > 1 {
		n = atoi(f[1])
	}
	if n > maxOpenFiles {
		t.Errorf("the module held %d files open at once, past %d", n, maxOpenFiles)
	}
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			break
		}
		n = n*10 + int(c-'0')
	}
	return n
}
