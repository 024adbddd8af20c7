package mcpserver_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandboxtest"
)

// TestSessionWarmByDefault: an MCP session over the native backend (through
// the metrics wrapper, as `airlock mcp` and `serve` run it) serves its calls
// from warm sandboxes without being asked to, in a tree whose protected
// paths (.bashrc, .vscode, ...) are missing, and the tree holds no
// placeholder while those sandboxes wait.
func TestSessionWarmByDefault(t *testing.T) {
	backend := sandboxtest.Native(t)
	w, ok := backend.(interface{ Warm(*sandbox.Spec) int })
	if !ok {
		t.Skip("the native backend of this platform keeps no warm sandboxes")
	}
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			f := newFixture(t, backend, nil)
			if err := os.WriteFile(filepath.Join(f.root, "notes.txt"), []byte("hello\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			g, err := grant.FromFlags(f.root, grant.Flags{})
			if err != nil {
				t.Fatal(err)
			}
			// The session guards airlock's own files (see broker.OwnFiles).
			hide, keep := broker.OwnFiles(g, f.records, nil)
			if g, err = g.Guard(hide, keep); err != nil {
				t.Fatal(err)
			}
			spec := broker.ToolSpecFor(g, "read_file")
			cs := tr.connect(t, f, nil)
			// The first call opens the session, which starts filling its pool.
			if res := call(t, cs, "read_file", map[string]any{"path": "notes.txt"}); res.IsError {
				t.Fatalf("first call: %q", text(t, res))
			}
			for i := 1; i <= 3; i++ {
				// The last call's placeholders go with its teardown, which
				// may end after its answer; the warm sandboxes hold none.
				eventually(t, 20*time.Second, "two warm sandboxes and a tree holding only notes.txt", func() bool {
					entries, _ := os.ReadDir(f.root)
					return w.Warm(spec) >= broker.DefaultPool && len(entries) == 1
				})
				res := call(t, cs, "read_file", map[string]any{"path": "notes.txt"})
				m := callMeta(t, res)
				if got := text(t, res); !strings.Contains(got, "hello") || res.IsError {
					t.Fatalf("call %d: %q", i, got)
				}
				if m.Isolation == nil || !slices.Contains(m.Isolation.Features, "warm") || !slices.Contains(m.Isolation.Features, "seccomp") {
					t.Fatalf("call %d: isolation %+v, want a warm, locked-down sandbox", i, m.Isolation)
				}
			}
		})
	}
}
