package wasm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/wasm/wasmtest"
)

// toolGrant is a grant with one wasm tool of the given module, reading
// data read-only.
func toolGrant(t testing.TB, module, data string) *grant.Grant {
	t.Helper()
	b, err := os.ReadFile(module)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	base := filepath.Dir(data)
	g, err := grant.Parse([]byte(fmt.Sprintf(`
[paths]
read_only = [%q]
[tools.wasm.upper]
module = %q
sha256 = %q
description = "Upper-cases text."
read_only = [%q]
time = "10s"
`, data, module, hex.EncodeToString(sum[:]), data)), "grant.toml", base)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestWasmToolRunsFreshEachCall(t *testing.T) {
	data := tempDir(t)
	write(t, filepath.Join(data, "in.txt"), "from a file\nsecond line")
	g := toolGrant(t, wasmtest.Build(t, "testdata/upper"), data)
	tools, err := NewTools(context.Background(), testEngine(t), g)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		r, err := tools.Call(context.Background(), g, "upper", json.RawMessage(`{"text":"hi"}`))
		if err != nil {
			t.Fatal(err)
		}
		if string(r.Stdout) != "HI (calls 1)\n" {
			t.Errorf("call %d: %q, want a fresh instance every time", i, r.Stdout)
		}
	}
	r, _ := tools.Call(context.Background(), g, "upper", json.RawMessage(`{"path":"`+filepath.Join(data, "in.txt")+`"}`))
	if string(r.Stdout) != "FROM A FILE (calls 1)\n" {
		t.Errorf("reading its granted directory: %q", r.Stdout)
	}
	r, _ = tools.Call(context.Background(), g, "upper", json.RawMessage(`{"path":"/etc/passwd"}`))
	if r.Outcome.ExitCode == 0 || strings.Contains(string(r.Stdout), "ROOT") {
		t.Errorf("reading outside its directories: exit %d %q", r.Outcome.ExitCode, r.Stdout)
	}
	r, _ = tools.Call(context.Background(), g, "upper", json.RawMessage(`{"fail":true}`))
	if r.Outcome.ExitCode != 3 || !strings.Contains(r.Detail(), "asked to fail") {
		t.Errorf("a failing call: exit %d, detail %q", r.Outcome.ExitCode, r.Detail())
	}
}

func TestWasmToolWithWrongHashIsRefused(t *testing.T) {
	data := t.TempDir()
	mod := filepath.Join(t.TempDir(), "echo.wasm")
	if err := os.WriteFile(mod, wasmtest.Echo(), 0o644); err != nil {
		t.Fatal(err)
	}
	g := toolGrant(t, mod, data)
	if err := os.WriteFile(mod, append(wasmtest.Echo(), 0, 0), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := NewTools(context.Background(), testEngine(t), g)
	if err == nil || !strings.Contains(err.Error(), "sha256") {
		t.Errorf("NewTools: %v, want the hash refused", err)
	}
}

// BenchmarkWasmToolCall measures one warm call of a wasm tool: a fresh
// instance, the run and the result. echo is a minimal hand-written module
// (the runtime's own cost); go is a module built by the Go toolchain (the
// Go runtime starts in every instance).
func BenchmarkWasmToolCall(b *testing.B) {
	data := tempDir(b)
	echo := filepath.Join(b.TempDir(), "echo.wasm")
	if err := os.WriteFile(echo, wasmtest.Echo(), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct{ name, module string }{
		{"echo", echo},
		{"go", wasmtest.Build(b, "testdata/upper")},
	} {
		b.Run(tc.name, func(b *testing.B) {
			eng, err := NewEngine(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			defer eng.Close(context.Background())
			g := toolGrant(b, tc.module, data)
			tools, err := NewTools(context.Background(), eng, g)
			if err != nil {
				b.Fatal(err)
			}
			args := json.RawMessage(`{"text":"hello"}`)
			times := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				r, err := tools.Call(context.Background(), g, "upper", args)
				if err != nil || len(r.Stdout) == 0 || !bytes.Contains(bytes.ToUpper(r.Stdout), []byte("HELLO")) {
					b.Fatalf("call: %v %q", err, r.Stdout)
				}
				times = append(times, time.Since(start))
			}
			b.StopTimer()
			sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
			b.ReportMetric(float64(times[len(times)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(times[len(times)*99/100].Microseconds()), "p99-µs")
		})
	}
}

// TestWasmToolDirectoryIsNotReopenedByName: a wasm tool's directory is
// opened when the tool is loaded and never again by name, so a symlink (or
// another directory) put in its place later leads the tool nowhere; it
// was reopened at every call, and a sandboxed shell call of the session
// that ran "mv work work.old; ln -s /outside work" had the tool read and
// write outside the grant (red team).
func TestWasmToolDirectoryIsNotReopenedByName(t *testing.T) {
	ws, outside := tempDir(t), tempDir(t)
	work := filepath.Join(ws, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(work, "file"), "inside")
	write(t, filepath.Join(outside, "file"), "OUTSIDE")
	mod := wasmtest.Build(t, "testdata/upper")
	b, err := os.ReadFile(mod)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(b)
	g := testGrant(t, ws, fmt.Sprintf(`
[paths]
read_write = ["."]
[tools.wasm.upper]
module = %q
sha256 = %q
description = "Upper-cases text."
read_write = ["work"]
`, mod, hex.EncodeToString(sum[:])))
	tools, err := NewTools(context.Background(), testEngine(t), g)
	if err != nil {
		t.Fatal(err)
	}
	defer tools.Close()
	call := func() (string, error) {
		r, err := tools.Call(context.Background(), g, "upper", json.RawMessage(`{"path":"`+filepath.Join(work, "file")+`"}`))
		if err != nil {
			return "", err
		}
		return string(r.Stdout), nil
	}
	if out, err := call(); err != nil || out != "INSIDE (calls 1)\n" {
		t.Fatalf("before: %q %v", out, err)
	}
	if err := os.Rename(work, work+".old"); err != nil {
		t.Fatal(err)
	}
	for _, swap := range []struct {
		name string
		do   func() error
	}{
		{"a symlink to a directory outside the grant", func() error { return os.Symlink(outside, work) }},
		{"another directory", func() error {
			if err := os.Mkdir(work, 0o755); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(work, "file"), []byte("OUTSIDE"), 0o644)
		}},
	} {
		if err := swap.do(); err != nil {
			t.Fatal(err)
		}
		out, err := call()
		if strings.Contains(out, "OUTSIDE") || !errors.Is(err, errMoved) {
			t.Errorf("after %s took its place: %q %v, want the call refused", swap.name, out, err)
		}
		os.RemoveAll(work)
	}
	// A session loading the tool with a symlink in its place refuses it.
	if err := os.Symlink(outside, work); err != nil {
		t.Fatal(err)
	}
	if _, err := NewTools(context.Background(), testEngine(t), g); !errors.Is(err, errMoved) {
		t.Errorf("loading with a symlink in its place: %v, want refused", err)
	}
}
