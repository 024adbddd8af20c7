package cli

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/sandboxtest"
	"github.com/airlockhq/airlock/internal/wasm/wasmtest"
)

// BenchmarkToolCall compares, per call as an agent's session makes it: a
// wasm tool (a fresh instance, the run and its result; "echo" is a minimal
// hand-written module, "go" one built by the Go toolchain), the native
// read_file (a fresh Linux sandbox per call), and a direct cat of the
// same file. Ratios are in docs/wasm.md.
func BenchmarkToolCall(b *testing.B) {
	sandboxtest.Native(b)
	ws := b.TempDir()
	file := filepath.Join(ws, "hello.txt")
	if err := os.WriteFile(file, []byte("hello\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	echo := filepath.Join(b.TempDir(), "echo.wasm")
	if err := os.WriteFile(echo, wasmtest.Echo(), 0o644); err != nil {
		b.Fatal(err)
	}
	upper := wasmtest.Build(b, "../wasm/testdata/upper")
	pin := func(p string) string {
		data, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		h := sha256.Sum256(data)
		return hex.EncodeToString(h[:])
	}
	g := filepath.Join(b.TempDir(), "grant.toml")
	text := fmt.Sprintf(`[paths]
read_write = [%q]
[tools.wasm.echo]
module = %q
sha256 = %q
description = "echo"
[tools.wasm.upper]
module = %q
sha256 = %q
description = "upper"
`, ws, echo, pin(echo), upper, pin(upper))
	if err := os.WriteFile(g, []byte(text), 0o644); err != nil {
		b.Fatal(err)
	}
	env := &Env{Getenv: os.Getenv}
	gf := &grantFlags{grantFile: g, records: b.TempDir()}
	p, err := gf.prepare(env)
	if err != nil {
		b.Fatal(err)
	}
	defer p.close()
	o := p.options()
	o.Pool = -1 // every native call builds its sandbox, as airlock call does
	s, err := broker.Open(o)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	call := func(tool, args, want string) func(b *testing.B) {
		return func(b *testing.B) {
			times := make([]time.Duration, 0, b.N)
			for i := 0; i < b.N; i++ {
				start := time.Now()
				res, err := s.Call(context.Background(), tool, json.RawMessage(args))
				if err != nil || !strings.Contains(res.Output.Content, want) {
					b.Fatalf("%s: %v %+v", tool, err, res)
				}
				times = append(times, time.Since(start))
			}
			reportP50(b, times)
		}
	}
	b.Run("wasm_echo", call("echo", `{"text":"hello"}`, "hello"))
	b.Run("wasm_go", call("upper", `{"text":"hello"}`, "HELLO"))
	b.Run("native_read_file", call("read_file", `{"path":"`+file+`"}`, "hello"))
	b.Run("cat", func(b *testing.B) {
		times := make([]time.Duration, 0, b.N)
		for i := 0; i < b.N; i++ {
			start := time.Now()
			out, err := exec.Command("cat", file).Output()
			if err != nil || string(out) != "hello\n" {
				b.Fatal(err)
			}
			times = append(times, time.Since(start))
		}
		reportP50(b, times)
	})
}

func reportP50(b *testing.B, times []time.Duration) {
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	b.ReportMetric(float64(times[len(times)/2].Microseconds()), "p50-µs")
}

// BenchmarkRunStart measures `airlock run` of a small capsule from start to
// exit, compiling the module every time (there is no compilation cache).
// "echo" is a minimal module, "go" a Go-built one (3.8 MB).
func BenchmarkRunStart(b *testing.B) {
	echo := filepath.Join(b.TempDir(), "echo.wasm")
	if err := os.WriteFile(echo, wasmtest.Echo(), 0o644); err != nil {
		b.Fatal(err)
	}
	probe := wasmtest.Build(b, "../wasm/testdata/probe")
	ws := b.TempDir()
	b.Setenv("AIRLOCK_STATE_DIR", b.TempDir())
	for _, m := range []struct{ name, path string }{{"echo", echo}, {"go", probe}} {
		b.Run(m.name, func(b *testing.B) {
			b.Chdir(ws)
			for i := 0; i < b.N; i++ {
				code := Main(context.Background(), []string{"run", "--unsandboxed", m.path, "--", "exit", "0"}, strings.NewReader(""), ioDiscard{}, ioDiscard{})
				if code != 0 {
					b.Fatalf("exit %d", code)
				}
			}
		})
	}
}

type ioDiscard struct{}

func (ioDiscard) Write(p []byte) (int, error) { return len(p), nil }
