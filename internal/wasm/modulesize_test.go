package wasm

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/internal/wasm/wasmtest"
)

// TestWasmToolModuleIsReadWithinABound: a wasm tool's module is read whole
// into the broker when a session starts, before its hash can be checked.
// Whoever can write where it lies (a sandbox of an earlier session, when
// it sits in a writable grant) put a large sparse file there, and every
// session start read all of it into memory (here 2 GiB, as much as the
// file said) before refusing it for its hash. It is refused by its size,
// read no further than the bound capsules have.
func TestWasmToolModuleIsReadWithinABound(t *testing.T) {
	data := t.TempDir()
	mod := filepath.Join(t.TempDir(), "echo.wasm")
	if err := os.WriteFile(mod, wasmtest.Echo(), 0o644); err != nil {
		t.Fatal(err)
	}
	g := toolGrant(t, mod, data)
	f, err := os.OpenFile(mod, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(wasmtest.Echo()); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(2 << 30); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	f.Close()
	var nerr error
	n := allocatedDuring(func() { _, nerr = NewTools(context.Background(), testEngine(t), g) })
	if nerr == nil {
		t.Fatal("NewTools took a 2 GiB module")
	}
	t.Logf("allocated %d MiB: %v", n>>20, nerr)
	if n > 64<<20 {
		t.Errorf("the broker allocated %d MiB reading a module it refused", n>>20)
	}
	if !strings.Contains(nerr.Error(), "larger than") {
		t.Errorf("NewTools: %v, want the module refused for its size", nerr)
	}
}
