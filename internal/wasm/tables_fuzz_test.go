package wasm

import (
	"bytes"
	"testing"
)

// FuzzBoundTables: boundTables reads any bytes without panicking, and
// what it returns is already bounded: bounding it again changes nothing
// and counts the same entries. `go test -run '^$' -fuzz FuzzBoundTables
// ./internal/wasm` runs it longer.
func FuzzBoundTables(f *testing.F) {
	header := []byte("\x00asm\x01\x00\x00\x00")
	f.Add(header)
	// A table section: one funcref table, no maximum, minimum 2^27.
	f.Add(append(append([]byte(nil), header...), 4, 6, 1, 0x70, 0x00, 0x80, 0x80, 0x80, 0x40))
	// One funcref table with a maximum, then a custom section.
	f.Add(append(append([]byte(nil), header...), 4, 5, 1, 0x70, 0x01, 2, 10, 0, 3, 1, 'x', 0))
	// A reference type with a heap type, and a table with an initialiser.
	f.Add(append(append([]byte(nil), header...), 4, 5, 1, 0x63, 0x70, 0x00, 1))
	f.Add(append(append([]byte(nil), header...), 4, 4, 1, 0x40, 0x00, 0x70))
	f.Fuzz(func(t *testing.T, wasm []byte) {
		out, entries, err := boundTables(wasm)
		if err != nil {
			return
		}
		again, entries2, err := boundTables(out)
		if err != nil {
			t.Fatalf("bounding %x again: %v", out, err)
		}
		if !bytes.Equal(again, out) || entries2 != entries {
			t.Fatalf("bounding again changed %x (%d entries) into %x (%d entries)", out, entries, again, entries2)
		}
	})
}
