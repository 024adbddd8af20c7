package wasm

import (
	"errors"
	"fmt"
)

// errBinary is a module whose sections cannot be walked.
var errBinary = errors.New("malformed module")

// definedMemoryPages returns the largest minimum, in pages, of the memories
// the module defines (its memory section), exported or not. wazero names
// only exported and imported memories, and instantiating a module whose
// memory starts past the allocator's limit panics inside wazero, so the
// limit is checked against this before any instance is made.
func definedMemoryPages(wasm []byte) (uint64, error) {
	if len(wasm) < 8 {
		return 0, errBinary
	}
	b := wasm[8:]
	var most uint64
	for len(b) > 0 {
		id := b[0]
		size, n, ok := uleb(b[1:])
		if !ok || size > uint64(len(b)-1-n) {
			return 0, errBinary
		}
		body := b[1+n : 1+n+int(size)]
		b = b[1+n+int(size):]
		if id != 5 { // the memory section
			continue
		}
		count, n, ok := uleb(body)
		if !ok {
			return 0, errBinary
		}
		body = body[n:]
		for range count {
			if len(body) == 0 {
				return 0, errBinary
			}
			flags := body[0]
			if flags&^0x07 != 0 {
				return 0, fmt.Errorf("%w: memory limits flags %#x", errBinary, flags)
			}
			pages, n, ok := uleb(body[1:])
			if !ok {
				return 0, errBinary
			}
			body = body[1+n:]
			if flags&0x01 != 0 { // a maximum follows
				if _, n, ok = uleb(body); !ok {
					return 0, errBinary
				}
				body = body[n:]
			}
			most = max(most, pages)
		}
	}
	return most, nil
}

// uleb decodes an unsigned LEB128 number of at most 64 bits, returning it
// and its length.
func uleb(b []byte) (uint64, int, bool) {
	var v uint64
	for i := 0; i < len(b) && i < 10; i++ {
		v |= uint64(b[i]&0x7f) << (7 * i)
		if b[i]&0x80 == 0 {
			return v, i + 1, true
		}
	}
	return 0, 0, false
}

// tableEntryBytes is what wazero allocates for one table entry (a
// pointer-sized reference), outside the module's linear memory.
const tableEntryBytes = 8

// boundTables returns the module with every table it defines given a
// maximum (a table declared with none gets its minimum), and the entries
// all its tables can ever hold. Tables live outside the linear memory the
// allocator caps: a table declared with a huge minimum, or grown by
// table.grow (Go's compiler declares tables with no maximum), made the
// broker allocate up to 32 GiB for a module limited to a few MiB. With a
// maximum on each, table.grow past it fails (-1, as the spec lets it)
// and what the tables can reach is known before any instance is made, to
// be counted against the memory limit (Run). A table form this cannot
// bound (one with an initialiser expression) is refused.
func boundTables(wasm []byte) ([]byte, uint64, error) {
	if len(wasm) < 8 {
		return nil, 0, errBinary
	}
	out := append([]byte(nil), wasm[:8]...)
	b := wasm[8:]
	var entries uint64
	for len(b) > 0 {
		id := b[0]
		size, n, ok := uleb(b[1:])
		if !ok || size > uint64(len(b)-1-n) {
			return nil, 0, errBinary
		}
		whole := b[:1+n+int(size)]
		body := b[1+n : 1+n+int(size)]
		b = b[1+n+int(size):]
		if id != 4 { // the table section
			out = append(out, whole...)
			continue
		}
		sec, e, err := boundTableSection(body)
		if err != nil {
			return nil, 0, err
		}
		entries += e
		out = append(out, 4)
		out = appendULEB(out, uint64(len(sec)))
		out = append(out, sec...)
	}
	return out, entries, nil
}

// boundTableSection rewrites the body of a table section (see boundTables).
func boundTableSection(body []byte) ([]byte, uint64, error) {
	count, n, ok := uleb(body)
	if !ok {
		return nil, 0, errBinary
	}
	body = body[n:]
	out := appendULEB(nil, count)
	var entries uint64
	for range count {
		if len(body) == 0 {
			return nil, 0, errBinary
		}
		// The element type: funcref or externref (one byte), or a
		// reference type with a heap type (0x63/0x64, then an s33).
		t := 1
		switch body[0] {
		case 0x40:
			return nil, 0, fmt.Errorf("%w: a table with an initialiser expression, whose size airlock cannot bound", errBinary)
		case 0x63, 0x64:
			_, m, ok := uleb(body[1:]) // an s33 has the same length as a LEB128
			if !ok {
				return nil, 0, errBinary
			}
			t += m
		}
		if len(body) <= t {
			return nil, 0, errBinary
		}
		out = append(out, body[:t]...)
		body = body[t:]
		flags := body[0]
		if flags != 0x00 && flags != 0x01 {
			return nil, 0, fmt.Errorf("%w: table limits flags %#x", errBinary, flags)
		}
		min, m, ok := uleb(body[1:])
		if !ok || min > 1<<32-1 {
			return nil, 0, errBinary
		}
		body = body[1+m:]
		max := min
		if flags == 0x01 {
			if max, m, ok = uleb(body); !ok || max > 1<<32-1 {
				return nil, 0, errBinary
			}
			body = body[m:]
		}
		out = append(out, 0x01)
		out = appendULEB(out, min)
		out = appendULEB(out, max)
		entries += max
	}
	if len(body) != 0 {
		return nil, 0, errBinary
	}
	return out, entries, nil
}

// appendULEB appends n as unsigned LEB128.
func appendULEB(b []byte, n uint64) []byte {
	for {
		c := byte(n & 0x7f)
		n >>= 7
		if n != 0 {
			c |= 0x80
		}
		b = append(b, c)
		if n == 0 {
			return b
		}
	}
}
