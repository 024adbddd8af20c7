package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/testenv"
)

// TestWasmToolDiskFillIsReported: a wasm tool that fills the file system
// of its read-write directory and goes on running is stopped by the disk
// guard, and the call says so as a sandboxed command's does: the disk
// sentence, class killed, in the reply and the audit record (hostile case
// 13; the wasm runtime's own test is TestDiskFillIsStoppedByTheGuard).
func TestWasmToolDiskFillIsReported(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.RequireFeature(t, "root, to mount a small file system for the tool's directory")
	}
	state := runEnv(t)
	ws := t.TempDir()
	if err := syscall.Mount(testenv.FSSource, ws, "tmpfs", 0, "size=96m,nr_inodes=20000"); err != nil {
		testenv.RequireFeature(t, "mounting a tmpfs: "+err.Error())
	}
	t.Cleanup(func() { _ = syscall.Unmount(ws, syscall.MNT_DETACH) })
	g := wasmToolGrant(t, ws)
	// The tool's own read-write directory: the small file system.
	text, err := os.ReadFile(g)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(g, append(text, []byte("read_write = [\""+ws+"\"]\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	args, _ := json.Marshal(map[string]any{"text": "x", "grow": filepath.Join(ws, "fill"), "size": 200 << 20, "hold": "30s"})
	code, stdout, stderr := runCLI(t, ws, "call", "--unsandboxed", "--grant", g, "upper", string(args))
	if !strings.Contains(stdout, broker.SentenceDisk) || code == 0 {
		t.Errorf("the fill: exit %d, stdout %q, stderr %q; want the disk sentence", code, stdout, stderr)
	}
	var seen bool
	for _, r := range records(t, state) {
		if r.Kind == audit.KindCall && r.Tool == "upper" {
			seen = true
			if r.Class != broker.ClassKilled {
				t.Errorf("the record's class is %q, want %q: %+v", r.Class, broker.ClassKilled, r)
			}
		}
	}
	if !seen {
		t.Error("no audit record of the wasm tool's call")
	}
}
