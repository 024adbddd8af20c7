// Package wasmtest builds test capsules from Go sources with the local
// toolchain (GOOS=wasip1 GOARCH=wasm), once per test binary, and assembles
// tiny hand-written modules for cases Go cannot produce (a trap in a named
// function, a loop with no safepoints).
package wasmtest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

var (
	mu     sync.Mutex
	dir    string
	builds = map[string]string{}
)

// GoTool returns the go command: $GOROOT/bin/go when GOROOT is set (as
// go test sets it), else the one on PATH.
func GoTool() string {
	if r := os.Getenv("GOROOT"); r != "" {
		if p := filepath.Join(r, "bin", "go"); fileExists(p) {
			return p
		}
	}
	return "go"
}

// GOROOT returns the toolchain's GOROOT (go env GOROOT).
func GOROOT(t testing.TB) string {
	t.Helper()
	out, err := exec.Command(GoTool(), "env", "GOROOT").Output()
	if err != nil {
		t.Fatalf("go env GOROOT: %v", err)
	}
	return strings.TrimSpace(string(out))
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// Build compiles the Go main package in pkgDir for wasip1 and returns the
// module's path. Builds are kept for the life of the test binary (Cleanup
// removes them).
func Build(t testing.TB, pkgDir string) string {
	t.Helper()
	abs, err := filepath.Abs(pkgDir)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if p, ok := builds[abs]; ok {
		return p
	}
	if dir == "" {
		if dir, err = os.MkdirTemp("", "airlock-wasmtest-"); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, filepath.Base(abs)+".wasm")
	cmd := exec.Command(GoTool(), "build", "-o", out, ".")
	cmd.Dir = abs
	cmd.Env = append(os.Environ(), "GOOS=wasip1", "GOARCH=wasm", "CGO_ENABLED=0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("building %s for wasip1: %v\n%s", pkgDir, err, stderr.Bytes())
	}
	builds[abs] = out
	return out
}

// Cleanup removes every module Build made; call it from TestMain.
func Cleanup() {
	mu.Lock()
	defer mu.Unlock()
	if dir != "" {
		os.RemoveAll(dir)
	}
}

// Section ids of the wasm binary format.
const (
	SecCustom   = 0
	SecType     = 1
	SecImport   = 2
	SecFunction = 3
	SecMemory   = 5
	SecExport   = 7
	SecCode     = 10
)

// Module assembles a wasm module from its sections, in order.
func Module(sections ...[]byte) []byte {
	b := []byte("\x00asm\x01\x00\x00\x00")
	for _, s := range sections {
		b = append(b, s...)
	}
	return b
}

// Section returns one section: id, then its content as a vector.
func Section(id byte, content ...[]byte) []byte {
	c := bytes.Join(content, nil)
	return append(append([]byte{id}, ULEB(uint64(len(c)))...), c...)
}

// Vec is a count then the items.
func Vec(items ...[]byte) []byte {
	return append(ULEB(uint64(len(items))), bytes.Join(items, nil)...)
}

// Name is a length-prefixed UTF-8 name.
func Name(s string) []byte { return append(ULEB(uint64(len(s))), s...) }

// ULEB encodes n as unsigned LEB128.
func ULEB(n uint64) []byte {
	var b []byte
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

// Body is one function body: no locals, then code, then end.
func Body(code ...byte) []byte {
	c := append([]byte{0x00}, code...)
	c = append(c, 0x0b)
	return append(ULEB(uint64(len(c))), c...)
}

// Trap is a module whose _start calls the function "boom", which executes
// unreachable.
func Trap() []byte {
	return Module(
		Section(SecType, Vec([]byte{0x60, 0, 0})),
		Section(SecFunction, Vec([]byte{0}, []byte{0})),
		Section(SecExport, Vec(append(Name("_start"), 0x00, 1))),
		Section(SecCode, Vec(Body(0x00), Body(0x10, 0x00))),
		Section(SecCustom, Name("name"), []byte{1}, sub(Vec(append([]byte{0}, Name("boom")...)))),
	)
}

func sub(b []byte) []byte { return append(ULEB(uint64(len(b))), b...) }

// Loop is a module whose _start spins in a loop with no calls and no
// memory access: the tightest loop wasm has.
func Loop() []byte {
	return Module(
		Section(SecType, Vec([]byte{0x60, 0, 0})),
		Section(SecFunction, Vec([]byte{0})),
		Section(SecExport, Vec(append(Name("_start"), 0x00, 0))),
		Section(SecCode, Vec(Body(0x03, 0x40, 0x0c, 0x00, 0x0b))),
	)
}

// HostCaller is a module that exports its memory as "mem" (one page) and
// a function "go"(tool_ptr, tool_len, args_ptr, args_len, buf_ptr, buf_len)
// -> i64 that calls airlock.call with the first four and airlock.result
// with the last two, returning call's result; for fuzzing the host
// functions with any pointers and lengths.
func HostCaller() []byte {
	i32, i64 := byte(0x7f), byte(0x7e)
	return Module(
		Section(SecType, Vec(
			[]byte{0x60, 4, i32, i32, i32, i32, 1, i64},
			[]byte{0x60, 2, i32, i32, 1, i32},
			[]byte{0x60, 6, i32, i32, i32, i32, i32, i32, 1, i64},
		)),
		Section(SecImport, Vec(
			append(append(Name("airlock"), Name("call")...), 0x00, 0),
			append(append(Name("airlock"), Name("result")...), 0x00, 1),
		)),
		Section(SecFunction, Vec([]byte{2})),
		Section(SecMemory, Vec([]byte{0x00, 1})),
		Section(SecExport, Vec(append(Name("mem"), 0x02, 0), append(Name("go"), 0x00, 2))),
		Section(SecCode, Vec(Body(
			0x20, 0, 0x20, 1, 0x20, 2, 0x20, 3, 0x10, 0, // call(...)
			0x20, 4, 0x20, 5, 0x10, 1, 0x1a, // result(...); drop
		))),
	)
}

// Echo is the smallest useful WASI program: _start reads up to 65000 bytes
// of stdin once and writes them to stdout. It measures the runtime's own
// cost per instance, with no language runtime to start.
func Echo() []byte {
	i32 := byte(0x7f)
	fdType := []byte{0x60, 4, i32, i32, i32, i32, 1, i32}
	code := []byte{
		0x41, 0x00, 0x41, 0x10, 0x36, 0x02, 0x00, // iov.buf = 16
		0x41, 0x04, 0x41, 0xe8, 0xfb, 0x03, 0x36, 0x02, 0x00, // iov.len = 65000
		0x41, 0x00, 0x41, 0x00, 0x41, 0x01, 0x41, 0x08, 0x10, 0x00, 0x1a, // fd_read(0, iovs, 1, &n)
		0x41, 0x04, 0x41, 0x08, 0x28, 0x02, 0x00, 0x36, 0x02, 0x00, // iov.len = n
		0x41, 0x01, 0x41, 0x00, 0x41, 0x01, 0x41, 0x0c, 0x10, 0x01, 0x1a, // fd_write(1, iovs, 1, &m)
	}
	return Module(
		Section(SecType, Vec(fdType, []byte{0x60, 0, 0})),
		Section(SecImport, Vec(
			append(append(Name("wasi_snapshot_preview1"), Name("fd_read")...), 0x00, 0),
			append(append(Name("wasi_snapshot_preview1"), Name("fd_write")...), 0x00, 0),
		)),
		Section(SecFunction, Vec([]byte{1})),
		Section(SecMemory, Vec([]byte{0x00, 1})),
		Section(SecExport, Vec(append(Name("_start"), 0x00, 2), append(Name("memory"), 0x02, 0))),
		Section(SecCode, Vec(Body(code...))),
	)
}

// Exit is a module whose _start calls WASI's proc_exit(code): modules of
// different codes differ in one byte of code and nothing else.
func Exit(code byte) []byte {
	i32 := byte(0x7f)
	return Module(
		Section(SecType, Vec([]byte{0x60, 1, i32, 0}, []byte{0x60, 0, 0})),
		Section(SecImport, Vec(append(append(Name("wasi_snapshot_preview1"), Name("proc_exit")...), 0x00, 0))),
		Section(SecFunction, Vec([]byte{1})),
		Section(SecExport, Vec(append(Name("_start"), 0x00, 1))),
		Section(SecCode, Vec(Body(0x41, code&0x3f, 0x10, 0x00))),
	)
}

// Memory is a module that defines a memory of min pages (and max, when
// max is not zero), exported as "memory" or not, and whose _start returns
// at once.
func Memory(min, max uint64, export bool) []byte {
	limits := append([]byte{0x00}, ULEB(min)...)
	if max != 0 {
		limits = append(append([]byte{0x01}, ULEB(min)...), ULEB(max)...)
	}
	exports := [][]byte{append(Name("_start"), 0x00, 0)}
	if export {
		exports = append(exports, append(Name("memory"), 0x02, 0))
	}
	return Module(
		Section(SecType, Vec([]byte{0x60, 0, 0})),
		Section(SecFunction, Vec([]byte{0})),
		Section(SecMemory, Vec(limits)),
		Section(SecExport, Vec(exports...)),
		Section(SecCode, Vec(Body())),
	)
}
