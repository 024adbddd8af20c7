package mcpserver

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/airlockhq/airlock/internal/connlimit"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/wire"
)

// Histogram bucket upper bounds, in seconds.
var (
	durationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}
	setupBuckets    = []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}
)

// Metrics counts calls and times them and their sandboxes, for the
// Prometheus text exposition at /metrics. It is safe for concurrent use.
type Metrics struct {
	mu        sync.Mutex
	calls     map[callKey]uint64
	durations map[string]*histogram // by tool
	setup     histogram
	sandboxes map[sandboxResult]uint64 // backend runs by result
	opened    uint64                   // broker sessions opened
	cost      map[string]*wire.Cost    // what calls spent, by tool
}

// sandboxResult labels airlock_sandbox_runs_total.
type sandboxResult string

// The results of a backend run.
const (
	sandboxStarted   sandboxResult = "started"   // the sandbox ran (whatever the command did)
	sandboxFailed    sandboxResult = "failed"    // the backend could not build or tear it down
	sandboxCancelled sandboxResult = "cancelled" // the call was cancelled before the backend finished
)

// sandboxResults is the order /metrics lists them in.
var sandboxResults = []sandboxResult{sandboxStarted, sandboxFailed, sandboxCancelled}

type callKey struct{ tool, class string }

// NewMetrics returns empty Metrics.
func NewMetrics() *Metrics {
	return &Metrics{
		calls:     map[callKey]uint64{},
		durations: map[string]*histogram{},
		setup:     newHistogram(setupBuckets),
		sandboxes: map[sandboxResult]uint64{},
		cost:      map[string]*wire.Cost{},
	}
}

// observeCost adds what one call of tool spent.
func (m *Metrics) observeCost(tool string, c *wire.Cost) {
	if c == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	t := m.cost[tool]
	if t == nil {
		t = &wire.Cost{}
		m.cost[tool] = t
	}
	peak := max(t.PeakMemory, c.PeakMemory)
	t.Add(c)
	t.PeakMemory = peak
}

// Backend wraps b so that every sandbox it runs reports its start latency
// (sandbox.Result.Setup) to m. Pass the wrapped backend to broker.Open. The
// wrapper keeps b's warm pool: when b has one (Pool and Prewarm, which the
// broker looks for), so does the wrapper.
func (m *Metrics) Backend(b sandbox.Backend) sandbox.Backend {
	t := &timedBackend{Backend: b, m: m}
	if p, ok := b.(pooler); ok {
		return &timedPoolBackend{timedBackend: t, pool: p}
	}
	return t
}

// pooler is the warm pool a backend may keep, as internal/broker (pool.go)
// looks for it.
type pooler interface {
	Pool(size int) (release func())
	Prewarm(spec *sandbox.Spec) error
}

// timedBackend observes each run's setup time.
type timedBackend struct {
	sandbox.Backend
	m *Metrics
}

// timedPoolBackend is a timedBackend over a backend with a warm pool.
type timedPoolBackend struct {
	*timedBackend
	pool pooler
}

// Pool holds the wrapped backend's pool.
func (b *timedPoolBackend) Pool(size int) (release func()) { return b.pool.Pool(size) }

// Prewarm fills the wrapped backend's pool for spec's shape.
func (b *timedPoolBackend) Prewarm(spec *sandbox.Spec) error { return b.pool.Prewarm(spec) }

// Run runs spec through the wrapped backend and records its result and
// setup time. A run that fails because its call was cancelled is counted as
// cancelled, not as a sandbox that failed.
func (b *timedBackend) Run(ctx context.Context, spec *sandbox.Spec) (*sandbox.Result, error) {
	res, err := b.Backend.Run(ctx, spec)
	b.m.mu.Lock()
	defer b.m.mu.Unlock()
	switch {
	case err != nil && ctx.Err() != nil:
		b.m.sandboxes[sandboxCancelled]++
	case err != nil:
		b.m.sandboxes[sandboxFailed]++
	default:
		b.m.sandboxes[sandboxStarted]++
		if res != nil {
			b.m.setup.observe(res.Setup.Seconds())
		}
	}
	return res, err
}

func (m *Metrics) observeCall(tool string, class wire.Class, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls[callKey{tool, string(class)}]++
	h := m.durations[tool]
	if h == nil {
		nh := newHistogram(durationBuckets)
		h = &nh
		m.durations[tool] = h
	}
	h.observe(d.Seconds())
}

func (m *Metrics) sessionOpened() {
	m.mu.Lock()
	m.opened++
	m.mu.Unlock()
}

// gauges are the values read from the server at scrape time.
type gauges struct {
	inFlight, running, waiting, sessions int
	conns                                *connlimit.Listener // nil: not serving HTTP through one
	mcpSessions                          *sessionCap         // nil: not serving HTTP
}

// write renders m and g in the Prometheus text format (version 0.0.4).
func (m *Metrics) write(w io.Writer, g gauges) error {
	bw := bufio.NewWriter(w)
	m.mu.Lock()
	defer m.mu.Unlock()

	header(bw, "airlock_calls_total", "counter", "Tool calls completed, by tool and outcome class.")
	keys := make([]callKey, 0, len(m.calls))
	for k := range m.calls {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b callKey) int {
		return strings.Compare(a.tool+"\x00"+a.class, b.tool+"\x00"+b.class)
	})
	for _, k := range keys {
		fmt.Fprintf(bw, "airlock_calls_total{tool=%s,class=%s} %d\n", quote(k.tool), quote(k.class), m.calls[k])
	}

	header(bw, "airlock_call_duration_seconds", "histogram", "Wall time of tool calls as the MCP server saw them, by tool.")
	tools := make([]string, 0, len(m.durations))
	for t := range m.durations {
		tools = append(tools, t)
	}
	slices.Sort(tools)
	for _, t := range tools {
		m.durations[t].write(bw, "airlock_call_duration_seconds", "tool="+quote(t)+",")
	}

	header(bw, "airlock_sandbox_setup_seconds", "histogram", "Time from asking the backend for a sandbox until the tool started in it.")
	m.setup.write(bw, "airlock_sandbox_setup_seconds", "")

	header(bw, "airlock_sandbox_runs_total", "counter", "Sandbox runs: started, failed (could not be built or torn down) or cancelled (the call was).")
	for _, r := range sandboxResults {
		fmt.Fprintf(bw, "airlock_sandbox_runs_total{result=%s} %d\n", quote(string(r)), m.sandboxes[r])
	}

	costTools := make([]string, 0, len(m.cost))
	for t := range m.cost {
		costTools = append(costTools, t)
	}
	slices.Sort(costTools)
	for _, c := range []struct {
		name, help string
		value      func(*wire.Cost) string
	}{
		{"airlock_cost_searches_total", "Web searches sent to a provider, by tool.", func(c *wire.Cost) string { return strconv.Itoa(c.Searches) }},
		{"airlock_cost_bytes_fetched_total", "Response bytes read from the network, by tool.", func(c *wire.Cost) string { return strconv.FormatInt(c.BytesFetched, 10) }},
		{"airlock_cost_cpu_seconds_total", "CPU time of the calls' sandboxes, by tool.", func(c *wire.Cost) string { return strconv.FormatFloat(c.CPUSeconds, 'g', -1, 64) }},
		{"airlock_cost_wall_seconds_total", "Wall time of the calls' sandboxes, by tool.", func(c *wire.Cost) string { return strconv.FormatFloat(c.WallSeconds, 'g', -1, 64) }},
	} {
		header(bw, c.name, "counter", c.help)
		for _, t := range costTools {
			fmt.Fprintf(bw, "%s{tool=%s} %s\n", c.name, quote(t), c.value(m.cost[t]))
		}
	}

	header(bw, "airlock_calls_in_flight", "gauge", "Tool calls being handled now, queued or running.")
	fmt.Fprintf(bw, "airlock_calls_in_flight %d\n", g.inFlight)
	header(bw, "airlock_calls_running", "gauge", "Tool calls running in a sandbox now.")
	fmt.Fprintf(bw, "airlock_calls_running %d\n", g.running)
	header(bw, "airlock_queue_depth", "gauge", "Tool calls waiting for a free slot in their session.")
	fmt.Fprintf(bw, "airlock_queue_depth %d\n", g.waiting)
	header(bw, "airlock_sessions_open", "gauge", "Broker sessions open now (one per MCP session that has made a call).")
	fmt.Fprintf(bw, "airlock_sessions_open %d\n", g.sessions)
	header(bw, "airlock_sessions_opened_total", "counter", "Broker sessions opened.")
	fmt.Fprintf(bw, "airlock_sessions_opened_total %d\n", m.opened)
	if c := g.mcpSessions; c != nil {
		header(bw, "airlock_mcp_sessions_open", "gauge", "MCP sessions kept over HTTP now, those that have not yet called a tool included.")
		fmt.Fprintf(bw, "airlock_mcp_sessions_open %d\n", c.live())
		header(bw, "airlock_mcp_sessions_max", "gauge", "The cap on MCP sessions kept over HTTP at once.")
		fmt.Fprintf(bw, "airlock_mcp_sessions_max %d\n", c.max)
		header(bw, "airlock_mcp_sessions_refused_total", "counter", "Requests to start an MCP session refused because the cap was reached.")
		fmt.Fprintf(bw, "airlock_mcp_sessions_refused_total %d\n", c.refused.Load())
	}
	if c := g.conns; c != nil {
		header(bw, "airlock_http_connections_open", "gauge", "HTTP connections open now.")
		fmt.Fprintf(bw, "airlock_http_connections_open %d\n", c.Open())
		header(bw, "airlock_http_connections_max", "gauge", "The cap on HTTP connections open at once.")
		fmt.Fprintf(bw, "airlock_http_connections_max %d\n", c.Max())
		header(bw, "airlock_http_connections_refused_total", "counter", "HTTP connections closed at once because the cap was reached by connections that had shown the token.")
		fmt.Fprintf(bw, "airlock_http_connections_refused_total %d\n", c.Refused())
		header(bw, "airlock_http_connections_evicted_total", "counter", "HTTP connections that had not shown the token, closed at the cap to make room for a new one.")
		fmt.Fprintf(bw, "airlock_http_connections_evicted_total %d\n", c.Evicted())
	}
	return bw.Flush()
}

func header(w io.Writer, name, typ, help string) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
}

// quote renders a label value: backslash, double quote and newline escaped.
func quote(v string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)
	return `"` + r.Replace(v) + `"`
}

// histogram is a cumulative Prometheus histogram.
type histogram struct {
	bounds []float64
	counts []uint64 // per bucket, not cumulative; last is +Inf
	sum    float64
	n      uint64
}

func newHistogram(bounds []float64) histogram {
	return histogram{bounds: bounds, counts: make([]uint64, len(bounds)+1)}
}

func (h *histogram) observe(v float64) {
	i, _ := slices.BinarySearch(h.bounds, v)
	h.counts[i]++
	h.sum += v
	h.n++
}

// write renders h; labels is "" or a list of label pairs ending in a comma.
func (h *histogram) write(w io.Writer, name, labels string) {
	var cum uint64
	for i, b := range h.bounds {
		cum += h.counts[i]
		fmt.Fprintf(w, "%s_bucket{%sle=%q} %d\n", name, labels, strconv.FormatFloat(b, 'g', -1, 64), cum)
	}
	cum += h.counts[len(h.bounds)]
	fmt.Fprintf(w, "%s_bucket{%sle=\"+Inf\"} %d\n", name, labels, cum)
	braces := ""
	if labels != "" {
		braces = "{" + strings.TrimSuffix(labels, ",") + "}"
	}
	fmt.Fprintf(w, "%s_sum%s %s\n", name, braces, strconv.FormatFloat(h.sum, 'g', -1, 64))
	fmt.Fprintf(w, "%s_count%s %d\n", name, braces, h.n)
}

// WriteMetrics writes the server's metrics in the Prometheus text format.
func (s *Server) WriteMetrics(w io.Writer) error { return s.writeMetrics(w, nil, nil) }

// writeMetrics writes the metrics, and those of conns and mcpSessions when
// they are not nil.
func (s *Server) writeMetrics(w io.Writer, conns *connlimit.Listener, mcpSessions *sessionCap) error {
	inFlight, running, waiting, sessions := s.stats()
	return s.metrics.write(w, gauges{inFlight: inFlight, running: running, waiting: waiting, sessions: sessions, conns: conns, mcpSessions: mcpSessions})
}
