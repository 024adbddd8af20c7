package mcpserver_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/connlimit"
	"github.com/airlockhq/airlock/internal/mcpserver"
)

// rpcPost posts one raw message to base/mcp with the token and, when set,
// the session id, and returns the status, the Content-Type and the body.
func rpcPost(t *testing.T, base, session, body string, extra map[string]string) (int, string, string, http.Header) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+mcpserver.PathMCP, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+testToken)
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	for k, v := range extra {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, resp.Header.Get("Content-Type"), string(b), resp.Header
}

// rawHTTPSession initializes an MCP session over raw HTTP and returns its id.
func rawHTTPSession(t *testing.T, base string) string {
	t.Helper()
	code, _, body, hdr := rpcPost(t, base, "", initialize, nil)
	id := hdr.Get("Mcp-Session-Id")
	if code != http.StatusOK || id == "" {
		t.Fatalf("initialize: %d %q (session %q)", code, body, id)
	}
	if code, _, body, _ := rpcPost(t, base, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil); code != http.StatusAccepted {
		t.Fatalf("notifications/initialized: %d %q", code, body)
	}
	return id
}

// TestHTTPBadBodies checks that over HTTP a malformed or ambiguous message
// gets a JSON-RPC error object with 400 (never plain text, never a run of
// another tool than the one named first), that a request other than
// initialize without a session gets 400, and that the session still serves.
func TestHTTPBadBodies(t *testing.T) {
	f := newFixture(t, nil, nil)
	base := serveHTTP(t, f, testToken)
	session := rawHTTPSession(t, base)
	pwned := filepath.Join(f.root, "pwned")
	for _, tc := range []struct {
		name, session, body string
		code                int64
		id                  string
		says                string
	}{
		{"truncated", session, `{`, -32700, "null", "parse error"},
		{"not json", session, `hello`, -32700, "null", "invalid character"},
		{"id out of range", session, `{"jsonrpc":"2.0","id":1e400,"method":"ping"}`, -32600, "null", `"id" must be`},
		{"batch", session, `[{"jsonrpc":"2.0","id":6,"method":"ping"}]`, -32600, "null", "batches are not supported"},
		{"jsonrpc 1.0", session, `{"jsonrpc":"1.0","id":5,"method":"ping"}`, -32600, "5", `"jsonrpc" must be "2.0"`},
		{"duplicate name", session, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read_file","name":"shell","arguments":{"path":"x","command":"touch pwned"}}}`, -32600, "7", `duplicate key "params.name"`},
		{"duplicate arguments", session, `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"shell","arguments":{"command":"true"},"arguments":{"command":"touch pwned"}}}`, -32600, "8", `duplicate key "params.arguments"`},
		{"duplicate method", session, `{"jsonrpc":"2.0","id":9,"method":"ping","method":"tools/call","params":{"name":"shell","arguments":{"command":"touch pwned"}}}`, -32600, "9", `duplicate key "method"`},
		{"a call without a session", "", `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"shell","arguments":{"command":"touch pwned"}}}`, -32600, "10", "no Mcp-Session-Id"},
		{"tools/list without a session", "", `{"jsonrpc":"2.0","id":"x","method":"tools/list"}`, -32600, `"x"`, "no Mcp-Session-Id"},
		{"a notification without a session", "", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, -32600, "null", "no Mcp-Session-Id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status, ctype, body, _ := rpcPost(t, base, tc.session, tc.body, nil)
			var reply struct {
				JSONRPC string          `json:"jsonrpc"`
				ID      json.RawMessage `json:"id"`
				Error   struct {
					Code    int64  `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if status != http.StatusBadRequest || !strings.HasPrefix(ctype, "application/json") {
				t.Fatalf("status %d, Content-Type %q (%q), want 400 with a JSON-RPC error object", status, ctype, body)
			}
			if err := json.Unmarshal([]byte(body), &reply); err != nil || reply.JSONRPC != "2.0" || reply.Error.Code != tc.code ||
				string(reply.ID) != tc.id || !strings.Contains(reply.Error.Message, tc.says) {
				t.Errorf("reply %q (%v), want code %d, id %s, a message saying %q", body, err, tc.code, tc.id, tc.says)
			}
		})
	}
	// The session still serves.
	status, _, body, _ := rpcPost(t, base, session, `{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"glob","arguments":{"pattern":"*"}}}`, nil)
	if status != http.StatusOK || !strings.Contains(body, "[airlock: glob") {
		t.Errorf("a call after the bad bodies: %d %q", status, body)
	}
	if _, err := os.Stat(pwned); err == nil {
		t.Error("a refused message ran its command")
	}
}

// TestOrigin checks the Origin header over HTTP: absent (any non-browser
// client), loopback, the address the request reached and an allowed origin
// pass; any other site is refused with 403 on every path, even when no token
// is required.
func TestOrigin(t *testing.T) {
	f := newFixture(t, nil, nil)
	h, err := f.srv.Handler(&mcpserver.HTTPOptions{Token: testToken, AllowOrigins: []string{"https://App.Example:8443"}})
	if err != nil {
		t.Fatal(err)
	}
	base := startHandler(t, h) // on 127.0.0.1
	auth := map[string]string{"Authorization": "Bearer " + testToken}
	for _, tc := range []struct {
		origin string
		ok     bool
	}{
		{"", true},
		{"http://localhost:6274", true},
		{"http://127.0.0.1:3000", true},
		{"http://[::1]:3000", true},
		{"https://app.example:8443", true},
		{"https://evil.example", false},
		{"https://app.example", false}, // another port is another origin
		{"http://app.example:8443", false},
		{"null", false},
		{"http://localhost.evil.example", false},
	} {
		t.Run(tc.origin, func(t *testing.T) {
			want := http.StatusForbidden
			if tc.ok {
				want = http.StatusOK
			}
			hdr := map[string]string{"Origin": tc.origin}
			if tc.origin == "" {
				hdr = nil
			}
			if code, _, body, _ := rpcPost(t, base, "", initialize, hdr); code != want {
				t.Errorf("POST /mcp: %d %q, want %d", code, body, want)
			}
			for _, path := range []string{mcpserver.PathMetrics, mcpserver.PathHealth} {
				merged := map[string]string{"Origin": tc.origin, "Authorization": auth["Authorization"]}
				if tc.origin == "" {
					delete(merged, "Origin")
				}
				if code, body, _ := get(t, base+path, merged); code != want {
					t.Errorf("GET %s: %d %q, want %d", path, code, body, want)
				}
			}
		})
	}

	// Without a token, a foreign page still cannot run a command.
	open, err := f.srv.Handler(&mcpserver.HTTPOptions{NoAuth: true})
	if err != nil {
		t.Fatal(err)
	}
	nbase := startHandler(t, open)
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"shell","arguments":{"command":"touch pwned"}}}`
	if code, _, body, _ := rpcPost(t, nbase, "", call, map[string]string{"Origin": "https://evil.example"}); code != http.StatusForbidden {
		t.Errorf("a foreign origin without auth: %d %q, want 403", code, body)
	}
	if _, err := os.Stat(filepath.Join(f.root, "pwned")); err == nil {
		t.Error("a foreign origin ran a command")
	}
	if _, err := f.srv.Handler(&mcpserver.HTTPOptions{NoAuth: true, AllowOrigins: []string{"app.example"}}); err == nil {
		t.Error("an allowed origin without a scheme: no error")
	}
}

// TestHostCheck checks that a loopback listener refuses a foreign Host on
// every path (DNS rebinding), /healthz and /metrics included, not only /mcp.
func TestHostCheck(t *testing.T) {
	f := newFixture(t, nil, nil)
	base := serveHTTP(t, f, testToken)
	for _, path := range []string{mcpserver.PathMCP, mcpserver.PathMetrics, mcpserver.PathHealth} {
		for _, host := range []string{"evil.example", "evil.example:80", "localhost.evil.example"} {
			method := http.MethodGet
			if path == mcpserver.PathMCP {
				method = http.MethodPost
			}
			req, _ := http.NewRequest(method, base+path, strings.NewReader(initialize))
			req.Host = host
			req.Header.Set("Authorization", "Bearer "+testToken)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("%s %s with Host %q: %d, want 403", method, path, host, resp.StatusCode)
			}
		}
		if code, _, _ := get(t, base+path, map[string]string{"Authorization": "Bearer " + testToken, "Accept": "text/event-stream"}); code == http.StatusForbidden {
			t.Errorf("%s with a loopback Host: 403", path)
		}
	}
}

// serveCapped serves f as `airlock serve` does: through a connection cap
// of max, with the header, idle and body timeouts short when short is not
// zero.
func serveCapped(t *testing.T, f *fixture, max int, short time.Duration) (*connlimit.Listener, string) {
	t.Helper()
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := connlimit.New(tcp, max, &connlimit.Options{Busy: mcpserver.BusyText, Token: testToken})
	h, err := f.srv.Handler(&mcpserver.HTTPOptions{Token: testToken, BodyTimeout: short, Connections: ln})
	if err != nil {
		t.Fatal(err)
	}
	hs := mcpserver.NewHTTPServer(h, &mcpserver.HTTPServerOptions{HeaderTimeout: short, IdleTimeout: short})
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return ln, tcp.Addr().String()
}

// dialRaw opens a TCP connection to addr.
func dialRaw(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	// Only a guard against hanging the test; the server must close first.
	c.SetDeadline(time.Now().Add(60 * time.Second))
	return c
}

// readAll reads until the server closes the connection.
func readAll(r io.Reader) (string, error) {
	b, err := io.ReadAll(r)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return string(b), fmt.Errorf("the server never closed the connection (%w)", err)
	}
	return string(b), nil
}

// rawRequest sends one HTTP request on c and reads its response; the
// body is read and kept in body.
func rawRequest(t *testing.T, c net.Conn, br *bufio.Reader, request string) (resp *http.Response, body string) {
	t.Helper()
	if _, err := io.WriteString(c, request); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// initializeRequest is a raw initialize POST to addr, with header lines.
func initializeRequest(addr, headers string) string {
	return fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\n%sContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s", addr, headers, len(initialize), initialize)
}

// TestConnectionTimeouts serves with the timeouts of `airlock serve` made
// short: a connection that sends nothing, one that stops in the middle of
// its body and one left idle after a response are each closed by the
// server.
func TestConnectionTimeouts(t *testing.T) {
	f := newFixture(t, nil, nil)
	_, addr := serveCapped(t, f, 16, 300*time.Millisecond)
	silent := dialRaw(t, addr)
	slowBody := dialRaw(t, addr)
	fmt.Fprintf(slowBody, "POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\n{\"jsonrpc\":", addr, testToken)
	if got, err := readAll(silent); err != nil || got != "" {
		t.Errorf("the silent connection: read %q, %v; want it closed without a word", got, err)
	}
	if got, err := readAll(slowBody); err != nil || !strings.HasPrefix(got, "HTTP/1.1 408 ") {
		t.Errorf("the slow body: read %q, %v; want 408 and the close", got, err)
	}
	idle := dialRaw(t, addr)
	br := bufio.NewReader(idle)
	if resp, _ := rawRequest(t, idle, br, fmt.Sprintf("GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", addr)); resp.StatusCode != http.StatusOK || resp.Close {
		t.Fatalf("GET /healthz on a kept-alive connection: %d, close %v", resp.StatusCode, resp.Close)
	}
	if rest, err := readAll(br); err != nil || len(rest) != 0 {
		t.Errorf("the idle connection: %q, %v; want it closed", rest, err)
	}
}

// TestRefusalsCloseTheConnection: a request refused for its token (401),
// its Host or its Origin (403) is answered with "Connection: close" and
// its connection closed, so a client refused holds nothing afterwards.
func TestRefusalsCloseTheConnection(t *testing.T) {
	f := newFixture(t, nil, nil)
	ln, addr := serveCapped(t, f, 16, 0)
	for _, tc := range []struct {
		name, headers string
		want          int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"wrong token", "Authorization: Bearer " + strings.Repeat("x", len(testToken)) + "\r\n", http.StatusUnauthorized},
		{"foreign Origin", "Authorization: Bearer " + testToken + "\r\nOrigin: https://evil.example\r\n", http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, addr)
			br := bufio.NewReader(c)
			resp, _ := rawRequest(t, c, br, initializeRequest(addr, tc.headers))
			if resp.StatusCode != tc.want || !resp.Close {
				t.Errorf("status %d, close %v; want %d and Connection: close", resp.StatusCode, resp.Close, tc.want)
			}
			if rest, err := readAll(br); err != nil || rest != "" {
				t.Errorf("after the refusal: %q, %v; want the connection closed", rest, err)
			}
		})
	}
	c := dialRaw(t, addr)
	br := bufio.NewReader(c)
	resp, _ := rawRequest(t, c, br, fmt.Sprintf("GET /healthz HTTP/1.1\r\nHost: rebound.example:%s\r\n\r\n", strings.Split(addr, ":")[1]))
	if resp.StatusCode != http.StatusForbidden || !resp.Close {
		t.Errorf("a foreign Host: status %d, close %v; want 403 and Connection: close", resp.StatusCode, resp.Close)
	}
	if rest, err := readAll(br); err != nil || rest != "" {
		t.Errorf("after the foreign Host: %q, %v; want the connection closed", rest, err)
	}
	eventually(t, 10*time.Second, "every refused connection released", func() bool { return ln.Open() == 0 })
}

// TestUnauthenticatedCannotStarve: connections that never show the token
// (kept after a 401, or silent) fill the cap, and an authorised client
// still gets in: a new connection takes the place of the oldest of them.
// Only a cap full of connections that showed the token refuses one (503).
func TestUnauthenticatedCannotStarve(t *testing.T) {
	f := newFixture(t, nil, nil)
	ln, addr := serveCapped(t, f, 3, 0)
	for range 3 {
		c := dialRaw(t, addr)
		rawRequest(t, c, bufio.NewReader(c), initializeRequest(addr, ""))
	}
	eventually(t, 10*time.Second, "the refused connections closed", func() bool { return ln.Open() == 0 })
	for range 3 {
		dialRaw(t, addr)
	}
	eventually(t, 10*time.Second, "the silent connections accepted", func() bool { return ln.Open() == 3 })
	auth := "Authorization: Bearer " + testToken + "\r\n"
	var c net.Conn
	var br *bufio.Reader
	for i := range 3 {
		c = dialRaw(t, addr)
		br = bufio.NewReader(c)
		if resp, body := rawRequest(t, c, br, initializeRequest(addr, auth)); resp.StatusCode != http.StatusOK {
			t.Fatalf("authorised initialize %d with the cap full: %d %s", i, resp.StatusCode, body)
		}
	}
	got, err := readAll(dialRaw(t, addr))
	if err != nil || !strings.HasPrefix(got, "HTTP/1.1 503 ") || !strings.Contains(got, "too many connections") {
		t.Errorf("a connection past a cap of authorised ones read %q (%v), want a 503 and the close", got, err)
	}
	resp, body := rawRequest(t, c, br, fmt.Sprintf("GET /metrics HTTP/1.1\r\nHost: %s\r\n%s\r\n", addr, auth))
	for _, line := range []string{"airlock_http_connections_open 3", "airlock_http_connections_max 3", "airlock_http_connections_evicted_total 3", "airlock_http_connections_refused_total 1"} {
		if resp.StatusCode != http.StatusOK || !hasLine(body, line) {
			t.Errorf("/metrics (%d) lacks %q:\n%s", resp.StatusCode, line, body)
		}
	}
}
