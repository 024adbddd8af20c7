package wasm

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/wasm/wasmtest"
)

// secTable is the table section's id.
const secTable = 4

// tableModule is a module with one funcref table of min entries (and max,
// when hasMax) whose _start runs code (a body with no locals).
func tableModule(min uint64, max uint64, hasMax bool, code ...byte) []byte {
	limits := append([]byte{0x00}, wasmtest.ULEB(min)...)
	if hasMax {
		limits = append(append([]byte{0x01}, wasmtest.ULEB(min)...), wasmtest.ULEB(max)...)
	}
	return wasmtest.Module(
		wasmtest.Section(wasmtest.SecType, wasmtest.Vec([]byte{0x60, 0, 0})),
		wasmtest.Section(wasmtest.SecFunction, wasmtest.Vec([]byte{0})),
		wasmtest.Section(secTable, wasmtest.Vec(append([]byte{0x70}, limits...))),
		wasmtest.Section(wasmtest.SecExport, wasmtest.Vec(append(wasmtest.Name("_start"), 0x00, 0))),
		wasmtest.Section(wasmtest.SecCode, wasmtest.Vec(wasmtest.Body(code...))),
	)
}

// tableModuleBody is tableModule with a whole function body (locals
// included) given.
func tableModuleBody(min uint64, hasMax bool, body []byte) []byte {
	limits := append([]byte{0x00}, wasmtest.ULEB(min)...)
	if hasMax {
		limits = append(append([]byte{0x01}, wasmtest.ULEB(min)...), wasmtest.ULEB(min)...)
	}
	return wasmtest.Module(
		wasmtest.Section(wasmtest.SecType, wasmtest.Vec([]byte{0x60, 0, 0})),
		wasmtest.Section(wasmtest.SecFunction, wasmtest.Vec([]byte{0})),
		wasmtest.Section(secTable, wasmtest.Vec(append([]byte{0x70}, limits...))),
		wasmtest.Section(wasmtest.SecExport, wasmtest.Vec(append(wasmtest.Name("_start"), 0x00, 0))),
		wasmtest.Section(wasmtest.SecCode, wasmtest.Vec(body)),
	)
}

// stepsBody is a body that grows table 0 by n entries, steps times, with
// an i32 local counting the steps.
func stepsBody(steps, n int64) []byte {
	c := []byte{0x01, 0x01, 0x7f, 0x03, 0x40} // one i32 local; loop
	c = append(c, growTable(n)...)
	c = append(c, 0x20, 0x00, 0x41, 0x01, 0x6a, 0x22, 0x00, 0x41) // local.get 0; i32.const 1; i32.add; local.tee 0; i32.const
	c = append(c, sleb(steps)...)
	c = append(c, 0x49, 0x0d, 0x00, 0x0b, 0x0b) // i32.lt_u; br_if 0; end (loop); end (body)
	return append(wasmtest.ULEB(uint64(len(c))), c...)
}

// sleb encodes n as signed LEB128 (an i32.const immediate).
func sleb(n int64) []byte {
	var b []byte
	for {
		c := byte(n & 0x7f)
		n >>= 7
		if n == 0 && c&0x40 == 0 || n == -1 && c&0x40 != 0 {
			return append(b, c)
		}
		b = append(b, c|0x80)
	}
}

// growTable is code that grows table 0 by n null entries and drops the
// result: ref.null func; i32.const n; table.grow 0; drop.
func growTable(n int64) []byte {
	c := []byte{0xd0, 0x70, 0x41}
	c = append(c, sleb(n)...)
	return append(c, 0xfc, 0x0f, 0x00, 0x1a)
}

// allocatedDuring returns the bytes the Go heap allocated while f ran.
func allocatedDuring(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestTablesCountAgainstTheMemoryLimit: a module's tables (8 bytes an
// entry in wazero) are allocated by the broker outside the linear memory
// the allocator caps. A table declared with a huge minimum, or grown with
// table.grow (Go's compiler declares tables with no maximum), had the
// broker allocate hundreds of MiB, up to 32 GiB (a fatal, unrecoverable
// out of memory for the whole broker), for a module whose memory limit
// was 1 MiB. Each must stay within the limit: refused before the
// instance is made, or table.grow failing (-1) as the spec lets it.
func TestTablesCountAgainstTheMemoryLimit(t *testing.T) {
	const limit = 1 << 20
	const budget = 64 << 20 // far above the limit, far below what was allocated
	for _, tc := range []struct {
		name string
		wasm []byte
	}{
		// 2^27 entries: wazero's largest minimum, 1 GiB.
		{"huge minimum", tableModule(1<<27, 0, false)},
		{"huge minimum with a maximum", tableModule(1<<27, 1<<27, true)},
		// 2^26 entries (512 MiB) added by one table.grow.
		{"table.grow with no maximum", tableModule(0, 0, false, growTable(1<<26)...)},
		{"table.grow under a huge maximum", tableModule(0, 1<<31, true, growTable(1<<26)...)},
		// 64 steps of 2^20 entries (8 MiB each).
		{"table.grow in steps", tableModuleBody(0, false, stepsBody(64, 1<<20))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := testEngine(t).Compile(context.Background(), tc.wasm)
			if err != nil {
				t.Fatalf("compile: %v", err) // a valid module; refusing it here is fine too, but say so
			}
			var o *Outcome
			var runErr error
			n := allocatedDuring(func() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				o, runErr = testEngine(t).Run(ctx, m, &Config{Memory: limit, Time: time.Minute})
			})
			t.Logf("allocated %d MiB; run: %v %+v", n>>20, runErr, o)
			if n > budget {
				t.Errorf("the broker allocated %d MiB for a module limited to %d KiB of memory", n>>20, limit>>10)
			}
			if runErr != nil && !errors.Is(runErr, ErrMemory) {
				t.Errorf("run: %v, want it refused with %v or run within the limit", runErr, ErrMemory)
			}
		})
	}
}

// TestTablesWithinTheLimitStillWork: a module whose table fits its limit
// runs, and table.grow within a declared maximum succeeds.
func TestTablesWithinTheLimitStillWork(t *testing.T) {
	// Grows by 16 and traps (unreachable) when the grow failed (-1).
	grow := append(growTable(16)[:len(growTable(16))-1], 0x41, 0x7f, 0x46, 0x04, 0x40, 0x00, 0x0b) // i32.const -1; i32.eq; if; unreachable; end
	m := compile(t, tableModule(1000, 2000, true, grow...))
	o, err := testEngine(t).Run(context.Background(), m, &Config{Memory: 16 << 20, Time: time.Minute})
	if err != nil || o.ExitCode != 0 || o.Trap != "" {
		t.Errorf("a table within the limit: %v %+v", err, o)
	}
}
