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
