package mcpserver_test

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestSlowBodyOnEveryPath sends a body that stops short of its
// Content-Length to requests that checkPost does not read: /healthz and an
// unknown path (no token needed), a POST to /mcp whose media type the SDK
// refuses, and a DELETE. net/http reads up to 256 KiB of an unread body
// before it answers, to keep the connection; without a deadline of its
// own that read waited for the rest for as long as the client kept the
// connection open, so a client (without the token, on /healthz) held a
// connection and its goroutine past the body timeout, with no answer.
// Each must be answered and its connection closed.
func TestSlowBodyOnEveryPath(t *testing.T) {
	f := newFixture(t, nil, nil)
	_, addr := serveCapped(t, f, 16, 300*time.Millisecond)
	auth := "Authorization: Bearer " + testToken + "\r\n"
	for _, req := range []string{
		"GET /healthz HTTP/1.1\r\nHost: %s\r\nContent-Length: 100\r\n\r\nx",
		"POST /nowhere HTTP/1.1\r\nHost: %s\r\nContent-Length: 100\r\n\r\nx",
		"GET /metrics HTTP/1.1\r\nHost: %s\r\n" + auth + "Content-Length: 100\r\n\r\nx",
		"POST /mcp HTTP/1.1\r\nHost: %s\r\n" + auth + "Content-Type: text/plain\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100\r\n\r\nx",
		"DELETE /mcp HTTP/1.1\r\nHost: %s\r\n" + auth + "Mcp-Session-Id: nope\r\nContent-Length: 100\r\n\r\nx",
	} {
		c := dialRaw(t, addr)
		fmt.Fprintf(c, req, addr)
		line, _, _ := strings.Cut(req, "\r\n")
		if got, err := readAll(c); err != nil || !strings.HasPrefix(got, "HTTP/1.1 ") {
			t.Errorf("%s with a stalled body: read %q, %v; want an answer and the close", line, got, err)
		}
	}
}
