package wasm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/wasm/wasmtest"
)

// TestWasmToolCannotWritePastFileSize checks that limits.file_size, the
// largest file a call may write, holds for a wasm tool as RLIMIT_FSIZE
// holds it for a sandboxed command: writing, writing at a far offset and
// truncating a file in the tool's read-write directory all stop at the
// limit (EIO: wazero passes no EFBIG on). Before, the limit was not passed to the module's files at
// all, and a tool under file_size = 64KiB left a 1 GiB file behind.
func TestWasmToolCannotWritePastFileSize(t *testing.T) {
	const limit = 64 << 10
	data := tempDir(t)
	module := wasmtest.Build(t, "testdata/upper")
	b, err := os.ReadFile(module)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	g, err := grant.Parse([]byte(fmt.Sprintf(`
[paths]
read_write = [%q]
[limits]
file_size = "64KiB"
[tools.wasm.upper]
module = %q
sha256 = %q
description = "Upper-cases text."
read_write = [%q]
time = "60s"
`, data, module, hex.EncodeToString(sum[:]), data)), "grant.toml", filepath.Dir(data))
	if err != nil {
		t.Fatal(err)
	}
	tools, err := NewTools(context.Background(), testEngine(t), g)
	if err != nil {
		t.Fatal(err)
	}
	defer tools.Close()
	for _, c := range []struct {
		name string
		args map[string]any
	}{
		{"write", map[string]any{"size": 1 << 20}},
		{"write at", map[string]any{"size": 1, "at": 1 << 30}},
		{"truncate", map[string]any{"size": 1 << 30, "truncate": true}},
	} {
		p := filepath.Join(data, strings.ReplaceAll(c.name, " ", "_"))
		write(t, p, "")
		c.args["grow"] = p
		args, _ := json.Marshal(c.args)
		r, err := tools.Call(context.Background(), g, "upper", args)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() > limit {
			t.Errorf("%s: the tool left a file of %d bytes, past file_size (%d); it said %q", c.name, fi.Size(), limit, r.Stdout)
		}
		if !strings.Contains(string(r.Stdout), "I/O error") {
			t.Errorf("%s: the tool was told %q, want EIO, the file size limit", c.name, r.Stdout)
		}
	}
}
