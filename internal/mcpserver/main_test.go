package mcpserver_test

import (
	"context"
	"encoding/json"
	"github.com/airlockhq/airlock/internal/sandboxtest"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/mcpserver"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/direct"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMain lets the test binary serve as the runner (for the unsandboxed
// backend) and as the sandbox init (for the native backend).
func TestMain(m *testing.M) { sandboxtest.Main(m) }

// fixture is a server over a temporary granted directory.
type fixture struct {
	srv     *mcpserver.Server
	root    string // the granted directory (read-write)
	records string // audit records
	open    mcpserver.OpenFunc
}

// newFixture serves the default grant of a fresh directory through backend
// (nil: the unsandboxed backend).
func newFixture(t testing.TB, backend sandbox.Backend, opts *mcpserver.Options) *fixture {
	t.Helper()
	return newFixtureBroker(t, backend, opts, nil)
}

// newFixtureBroker is newFixture with tune applied to the options of every
// broker session.
func newFixtureBroker(t testing.TB, backend sandbox.Backend, opts *mcpserver.Options, tune func(*broker.Options)) *fixture {
	t.Helper()
	return newFixtureGrant(t, backend, opts, tune, grant.Flags{})
}

// newFixtureFlags is newFixture, unsandboxed, with a grant built from flags.
func newFixtureFlags(t testing.TB, flags grant.Flags) *fixture {
	t.Helper()
	return newFixtureGrant(t, nil, nil, nil, flags)
}

// newFixtureGrant is newFixtureBroker with a grant built from flags.
func newFixtureGrant(t testing.TB, backend sandbox.Backend, opts *mcpserver.Options, tune func(*broker.Options), flags grant.Flags) *fixture {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	g, err := grant.FromFlags(root, flags)
	if err != nil {
		t.Fatalf("grant: %v", err)
	}
	toolRoot := "/"
	if backend == nil {
		b, err := direct.New(nil)
		if err != nil {
			t.Fatal(err)
		}
		backend, toolRoot = b, g.BaseDir()
	}
	f := &fixture{root: root, records: t.TempDir()}
	var o mcpserver.Options
	if opts != nil {
		o = *opts
	}
	if o.Metrics == nil {
		o.Metrics = mcpserver.NewMetrics()
	}
	wrapped := o.Metrics.Backend(backend)
	f.open = func(ctx context.Context) (*broker.Session, error) {
		bo := &broker.Options{Grant: g, Backend: wrapped, RecordsDir: f.records, ToolRoot: toolRoot, MaxConcurrent: 32}
		if tune != nil {
			tune(bo)
		}
		return broker.Open(bo)
	}
	o.Open = f.open
	if o.Grant == nil {
		o.Grant = g
	}
	f.srv, err = mcpserver.New(&o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		f.srv.Shutdown(ctx)
	})
	return f
}

// transport names a way to connect a client to a fixture.
type transport struct {
	name    string
	connect func(t testing.TB, f *fixture, copts *mcp.ClientOptions) *mcp.ClientSession
}

var transports = []transport{
	{"stdio", connectStdio},
	{"http", func(t testing.TB, f *fixture, copts *mcp.ClientOptions) *mcp.ClientSession {
		return connectHTTP(t, serveHTTP(t, f, testToken), testToken, copts)
	}},
}

// connectStdio connects a client over an in-memory newline-delimited JSON
// stream, the framing of the stdio transport.
func connectStdio(t testing.TB, f *fixture, copts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	go f.srv.Serve(ctx, st)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, copts).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatalf("client connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

const testToken = "test-token-0123456789abcdef"

// serveHTTP serves f's HTTP handler with token and returns the base URL.
func serveHTTP(t testing.TB, f *fixture, token string) string {
	t.Helper()
	h, err := f.srv.Handler(&mcpserver.HTTPOptions{Token: token, MaxBodyBytes: 1 << 20})
	if err != nil {
		t.Fatalf("Handler: %v", err)
	}
	return startHandler(t, h)
}

// bearerTransport adds a bearer token to every request.
type bearerTransport struct {
	token string
	base  http.RoundTripper
}

func (b *bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

// connectHTTP connects a client over streamable HTTP to base/mcp.
func connectHTTP(t testing.TB, base, token string, copts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	hc := &http.Client{Transport: &bearerTransport{token: token, base: http.DefaultTransport}}
	ct := &mcp.StreamableClientTransport{Endpoint: base + mcpserver.PathMCP, HTTPClient: hc, MaxRetries: -1}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, copts).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatalf("client connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// call calls a tool and fails the test on a protocol error.
func call(t testing.TB, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool %s: %v", name, err)
	}
	return res
}

// text returns the text of a result's single content block.
func text(t testing.TB, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("got %d content blocks, want 1", len(res.Content))
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content is %T, want text", res.Content[0])
	}
	return tc.Text
}

// callMeta decodes a result's _meta[MetaKey].
func callMeta(t testing.TB, res *mcp.CallToolResult) mcpserver.CallMeta {
	t.Helper()
	raw, ok := res.Meta[mcpserver.MetaKey]
	if !ok {
		t.Fatalf("result has no _meta[%q]: %v", mcpserver.MetaKey, res.Meta)
	}
	b, err := json.Marshal(raw)
	if err != nil {
		t.Fatal(err)
	}
	var m mcpserver.CallMeta
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("decoding _meta: %v", err)
	}
	return m
}

// eventually polls cond until it holds or d passes.
func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// metrics renders the server's metrics.
func metrics(t testing.TB, srv *mcpserver.Server) string {
	t.Helper()
	var b strings.Builder
	if err := srv.WriteMetrics(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// hasLine reports whether text holds line exactly.
func hasLine(text, line string) bool {
	for _, l := range strings.Split(text, "\n") {
		if l == line {
			return true
		}
	}
	return false
}

// auditRecords returns every audit record under dir as decoded JSON objects.
func auditRecords(t testing.TB, dir string) []map[string]any {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*", "*"))
	var out []map[string]any
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var m map[string]any
			if json.Unmarshal([]byte(line), &m) == nil {
				out = append(out, m)
			}
		}
	}
	return out
}
