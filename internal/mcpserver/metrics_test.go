package mcpserver_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/mcpserver"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/direct"
)

// TestMetricsBusy checks that a call refused because its session's queue is
// full is counted as busy, not as a refusal by the grant.
func TestMetricsBusy(t *testing.T) {
	f := newFixtureBroker(t, nil, nil, func(o *broker.Options) { o.MaxConcurrent, o.MaxQueue = 1, -1 })
	cs := connectStdio(t, f, nil)
	// The first call holds the only slot until the test lets it end (a
	// file in the workspace): a "sleep 1" let it end before a call made
	// a second late found the queue full.
	release := filepath.Join(f.root, "release")
	running := callAsync(cs, "shell", map[string]any{"command": "until [ -e '" + release + "' ]; do sleep 0.02; done; echo done"})
	eventually(t, 10*time.Second, "the first call to run", func() bool { return hasLine(metrics(t, f.srv), "airlock_calls_running 1") })
	res := call(t, cs, "glob", map[string]any{"pattern": "*"})
	if got := text(t, res); !res.IsError || !strings.Contains(got, "airlock is busy") {
		t.Fatalf("a call beyond the queue: isError=%v %q, want it refused as busy", res.IsError, got)
	}
	if m := callMeta(t, res); m.Class != broker.ClassRefused || m.Rule != "admission" {
		t.Errorf("_meta %+v: want the broker's class refused and rule admission, as audited", m)
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	<-running
	m := metrics(t, f.srv)
	if !hasLine(m, `airlock_calls_total{tool="glob",class="busy"} 1`) || strings.Contains(m, `class="refused"`) {
		t.Errorf("want the busy call counted as busy, none as refused:\n%s", m)
	}
}

// poolSpy is a backend with a warm pool that counts what the broker asks of it.
type poolSpy struct {
	sandbox.Backend
	pools, prewarms atomic.Int32
}

func (p *poolSpy) Pool(int) func()                  { p.pools.Add(1); return func() {} }
func (p *poolSpy) Prewarm(spec *sandbox.Spec) error { p.prewarms.Add(1); return nil }

// TestMetricsBackendKeepsPool checks that the metrics wrapper hides nothing
// the broker looks for: an MCP session over a backend with a warm pool holds
// that pool, as a session on the command line does.
func TestMetricsBackendKeepsPool(t *testing.T) {
	d, err := direct.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	spy := &poolSpy{Backend: d}
	wrapped := mcpserver.NewMetrics().Backend(spy)
	if _, ok := wrapped.(interface {
		Pool(int) func()
		Prewarm(*sandbox.Spec) error
	}); !ok {
		t.Fatalf("the wrapped backend %T has no Pool and Prewarm", wrapped)
	}
	if _, ok := mcpserver.NewMetrics().Backend(d).(interface{ Pool(int) func() }); ok {
		t.Error("a backend without a pool gained one through the wrapper")
	}
	f := newFixture(t, spy, nil)
	cs := connectStdio(t, f, nil)
	call(t, cs, "glob", map[string]any{"pattern": "*"}) // opens the broker session
	if spy.pools.Load() != 1 {
		t.Errorf("the MCP session's broker session asked for the pool %d times, want 1", spy.pools.Load())
	}
}
