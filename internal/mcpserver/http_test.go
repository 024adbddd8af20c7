package mcpserver_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/internal/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// initialize is a valid first request of an MCP session.
const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}`

// post sends body to url with the given headers and returns the status and body.
func post(t *testing.T, url string, body io.Reader, length int64, headers map[string]string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = length
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	return resp.StatusCode, string(b)
}

func get(t *testing.T, url string, headers map[string]string) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header
}

func TestAuth(t *testing.T) {
	f := newFixture(t, nil, nil)
	base := serveHTTP(t, f, testToken)
	for _, tc := range []struct {
		name   string
		header string
		want   int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"wrong token", "Bearer " + strings.Repeat("x", len(testToken)), http.StatusUnauthorized},
		{"token prefix", "Bearer " + testToken[:len(testToken)-1], http.StatusUnauthorized},
		{"token with suffix", "Bearer " + testToken + "x", http.StatusUnauthorized},
		{"basic scheme", "Basic " + testToken, http.StatusUnauthorized},
		{"bare token", testToken, http.StatusUnauthorized},
		{"right token", "Bearer " + testToken, http.StatusOK},
		{"scheme in lower case", "bearer " + testToken, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := map[string]string{}
			if tc.header != "" {
				h["Authorization"] = tc.header
			}
			code, body := post(t, base+mcpserver.PathMCP, strings.NewReader(initialize), int64(len(initialize)), h)
			if code != tc.want {
				t.Fatalf("status %d (%s), want %d", code, body, tc.want)
			}
			if code == http.StatusUnauthorized && strings.Contains(body, "protocolVersion") {
				t.Errorf("a refused request got an MCP answer: %s", body)
			}
			mcode, _, hdr := get(t, base+mcpserver.PathMetrics, h)
			if mcode != tc.want {
				t.Errorf("/metrics status %d, want %d", mcode, tc.want)
			}
			if tc.want == http.StatusUnauthorized && !strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Bearer") {
				t.Errorf("401 without a WWW-Authenticate: Bearer header: %v", hdr)
			}
		})
	}
	// And the SDK's own client is refused without the token.
	hc := &http.Client{}
	_, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: base + mcpserver.PathMCP, HTTPClient: hc, MaxRetries: -1}, nil)
	if err == nil || !strings.Contains(err.Error(), "401") && !strings.Contains(strings.ToLower(err.Error()), "unauthorized") {
		t.Errorf("client without a token: err %v, want a 401", err)
	}
}

func TestNoAuthNeedsNoToken(t *testing.T) {
	f := newFixture(t, nil, nil)
	if _, err := f.srv.Handler(&mcpserver.HTTPOptions{}); err == nil {
		t.Fatal("Handler without a token or NoAuth: no error")
	}
	h, err := f.srv.Handler(&mcpserver.HTTPOptions{NoAuth: true})
	if err != nil {
		t.Fatal(err)
	}
	base := startHandler(t, h)
	cs := connectHTTP(t, base, "", nil)
	if res := call(t, cs, "glob", map[string]any{"pattern": "*"}); res.IsError {
		t.Errorf("call over an unauthenticated server: %v", text(t, res))
	}
}

// chunked hides a reader's length so the request is sent chunked.
type chunked struct{ r io.Reader }

func (c chunked) Read(p []byte) (int, error) { return c.r.Read(p) }

func TestBodyLimit(t *testing.T) {
	f := newFixture(t, nil, nil)
	base := serveHTTP(t, f, testToken) // MaxBodyBytes 1 MiB
	auth := map[string]string{"Authorization": "Bearer " + testToken}
	big := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"pad":"` + strings.Repeat("a", 1<<20) + `"}}`
	for _, tc := range []struct {
		name   string
		body   io.Reader
		length int64
	}{
		{"declared length", strings.NewReader(big), int64(len(big))},
		{"chunked", chunked{strings.NewReader(big)}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := post(t, base+mcpserver.PathMCP, tc.body, tc.length, auth)
			if code != http.StatusRequestEntityTooLarge {
				t.Errorf("status %d (%.200s), want 413", code, body)
			}
		})
	}
	// Just under the limit is read (and answered by MCP).
	small := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"},"_meta":{"pad":"` + strings.Repeat("a", 1<<19) + `"}}}`
	if code, body := post(t, base+mcpserver.PathMCP, bytes.NewReader([]byte(small)), int64(len(small)), auth); code != http.StatusOK {
		t.Errorf("a body under the limit: status %d (%.200s), want 200", code, body)
	}
}

func TestHealthz(t *testing.T) {
	f := newFixture(t, nil, nil)
	base := serveHTTP(t, f, testToken)
	if code, body, _ := get(t, base+mcpserver.PathHealth, nil); code != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz: %d %q, want 200 ok without a token", code, body)
	}
	f.srv.Shutdown(context.Background())
	if code, _, _ := get(t, base+mcpserver.PathHealth, nil); code != http.StatusServiceUnavailable {
		t.Errorf("/healthz while shutting down: %d, want 503", code)
	}
}

func TestMetricsEndpoint(t *testing.T) {
	f := newFixture(t, nil, nil)
	base := serveHTTP(t, f, testToken)
	cs := connectHTTP(t, base, testToken, nil)
	call(t, cs, "read_file", map[string]any{"path": "missing"})
	call(t, cs, "glob", map[string]any{"pattern": "*"})
	call(t, cs, "glob", map[string]any{"pattern": "*"})
	call(t, cs, "read_file", map[string]any{"path": "/etc/passwd"})

	code, body, hdr := get(t, base+mcpserver.PathMetrics, map[string]string{"Authorization": "Bearer " + testToken})
	if code != http.StatusOK || !strings.HasPrefix(hdr.Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("/metrics: %d %v", code, hdr)
	}
	for _, line := range []string{
		`# TYPE airlock_calls_total counter`,
		`airlock_calls_total{tool="glob",class="ok"} 2`,
		`airlock_calls_total{tool="read_file",class="ok"} 1`,
		`airlock_calls_total{tool="read_file",class="refused"} 1`,
		`# TYPE airlock_call_duration_seconds histogram`,
		`airlock_call_duration_seconds_bucket{tool="glob",le="+Inf"} 2`,
		`airlock_call_duration_seconds_count{tool="glob"} 2`,
		`airlock_call_duration_seconds_count{tool="read_file"} 2`,
		`# TYPE airlock_sandbox_setup_seconds histogram`,
		`airlock_sandbox_setup_seconds_bucket{le="+Inf"} 3`,
		`airlock_sandbox_setup_seconds_count 3`,
		`airlock_sandbox_runs_total{result="started"} 3`,
		`airlock_sandbox_runs_total{result="failed"} 0`,
		`airlock_sandbox_runs_total{result="cancelled"} 0`,
		`airlock_calls_in_flight 0`,
		`airlock_calls_running 0`,
		`airlock_queue_depth 0`,
		`airlock_sessions_open 1`,
		`airlock_sessions_opened_total 1`,
	} {
		if !hasLine(body, line) {
			t.Errorf("/metrics lacks %q", line)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", body)
	}
	checkExposition(t, body)
}

// checkExposition checks every line is a comment or "name{labels} value",
// and histogram buckets are cumulative.
func checkExposition(t *testing.T, body string) {
	t.Helper()
	last := map[string]float64{}
	for _, line := range strings.Split(strings.TrimSuffix(body, "\n"), "\n") {
		if strings.HasPrefix(line, "# HELP ") || strings.HasPrefix(line, "# TYPE ") {
			continue
		}
		name, value, ok := strings.Cut(line, " ")
		if !ok || strings.Contains(value, " ") {
			t.Errorf("malformed line %q", line)
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			t.Errorf("line %q: value: %v", line, err)
		}
		if series, _, ok := strings.Cut(name, `le="`); ok && strings.Contains(name, "_bucket{") {
			if v < last[series] {
				t.Errorf("bucket %q is below the one before (%v)", line, last[series])
			}
			last[series] = v
		}
	}
}

// startHandler serves h and returns the base URL.
func startHandler(t testing.TB, h http.Handler) string {
	t.Helper()
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)
	return hs.URL
}
