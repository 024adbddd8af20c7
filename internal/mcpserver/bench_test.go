package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/airlockhq/airlock/internal/sandboxtest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkMCPHTTPReadFile measures read_file of a 4 KiB file over
// streamable HTTP, end to end (client, HTTP, broker, a fresh sandbox per
// call), with conc clients each in its own MCP session. It reports calls per
// second and the p50 and p99 latency of one call.
func BenchmarkMCPHTTPReadFile(b *testing.B) {
	for _, bk := range []string{"none", "unsandboxed", "native"} {
		for _, conc := range []int{1, 16} {
			b.Run(fmt.Sprintf("backend=%s/conc=%d", bk, conc), func(b *testing.B) {
				var backend sandbox.Backend
				switch bk {
				case "none":
					backend = instant{}
				case "native":
					backend = sandboxtest.Native(b)
				}
				benchReadFile(b, backend, conc)
			})
		}
	}
}

// instant is a backend that answers every call at once without running
// anything, so backend=none measures the front door alone: the client, HTTP,
// the SDK, the broker's checks, framing and the audit record.
type instant struct{}

func (instant) Run(ctx context.Context, spec *sandbox.Spec) (*sandbox.Result, error) {
	out, _ := json.Marshal(wire.ToolOutput{Content: "airlock\n"})
	if err := wire.WriteFrame(spec.Stdout, out); err != nil {
		return nil, err
	}
	return &sandbox.Result{Isolation: wire.Isolation{Backend: "none", Features: []string{}}}, nil
}

func (instant) Report() sandbox.Report { return sandbox.Report{Backend: "none"} }

func benchReadFile(b *testing.B, backend sandbox.Backend, conc int) {
	f := newFixture(b, backend, nil)
	if err := os.WriteFile(filepath.Join(f.root, "bench.txt"), []byte(strings.Repeat("airlock\n", 512)), 0o644); err != nil {
		b.Fatal(err)
	}
	base := serveHTTP(b, f, testToken)
	clients := make([]*mcp.ClientSession, conc)
	args := map[string]any{"path": "bench.txt"}
	for i := range clients {
		clients[i] = connectHTTP(b, base, testToken, nil)
		call(b, clients[i], "read_file", args) // open the broker session
	}
	lat := make([]time.Duration, 0, b.N)
	var mu sync.Mutex
	var next atomic.Int64
	var failed atomic.Int64
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for _, cs := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				t0 := time.Now()
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "read_file", Arguments: args})
				d := time.Since(t0)
				if err != nil || res.IsError {
					if failed.Add(1) == 1 {
						b.Logf("first failure: %v %v", err, res)
						if res != nil && len(res.Content) > 0 {
							b.Logf("text: %s", res.Content[0].(*mcp.TextContent).Text)
						}
					}
					continue
				}
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if n := failed.Load(); n > 0 {
		b.Fatalf("%d of %d calls failed", n, b.N)
	}
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[min(len(lat)-1, len(lat)*99/100)]), "p99-ms")
	b.ReportMetric(0, "ns/op") // wall time per call is meaningless at conc>1
	// The sandbox's share: mean start latency from the server's metrics.
	var sum, count float64
	for _, line := range strings.Split(metrics(b, f.srv), "\n") {
		if v, ok := strings.CutPrefix(line, "airlock_sandbox_setup_seconds_sum "); ok {
			sum, _ = strconv.ParseFloat(v, 64)
		}
		if v, ok := strings.CutPrefix(line, "airlock_sandbox_setup_seconds_count "); ok {
			count, _ = strconv.ParseFloat(v, 64)
		}
	}
	if count > 0 {
		b.ReportMetric(sum/count*1000, "setup-ms")
	}
}
