package egress

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"
)

// stalled is an upstream that answers one request with headers promising a
// body, then sends nothing and never closes: it only reads, and reports
// when its Read ends (the proxy's end closed or half-closed).
type stalled struct {
	conn      chan net.Conn // the upstream's end, once the headers are sent
	readEnded chan struct{}
}

func newStalled() *stalled {
	return &stalled{conn: make(chan net.Conn, 1), readEnded: make(chan struct{})}
}

func (s *stalled) serve(c net.Conn) {
	br := bufio.NewReader(c)
	if _, err := http.ReadRequest(br); err != nil {
		c.Close()
		return
	}
	io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n")
	s.conn <- c
	io.Copy(io.Discard, br)
	close(s.readEnded)
}

func waitFor(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("still waiting for %s", what)
	}
}

// When a sandbox ends (the proxy's context is cancelled) every connection
// of it is closed on both sides, including one whose upstream sent headers
// then stalled after the sandbox's end of the connection went away: Serve
// returns, the upstream's Read ends, and the proxy's end of the upstream
// connection is closed, not merely half-closed (a write to it fails).
func TestSandboxEndClosesBothSides(t *testing.T) {
	for _, proto := range []string{"socks5", "connect", "http"} {
		t.Run(proto, func(t *testing.T) {
			up := newStalled()
			h := newHarness(t, func(o *Options) { o.IdleTimeout = time.Hour })
			h.dial.serve = up.serve
			c := h.conn()
			switch proto {
			case "socks5":
				socksOpen(t, c, socksName("a.test", 7))
			case "connect":
				io.WriteString(c, "CONNECT a.test:7 HTTP/1.1\r\nHost: a.test:7\r\n\r\n")
				if _, err := io.ReadFull(c, make([]byte, len("HTTP/1.1 200 Connection established\r\n\r\n"))); err != nil {
					t.Fatal(err)
				}
			}
			target := "/"
			if proto == "http" {
				target = "http://a.test/"
			}
			fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: a.test\r\n\r\n", target)
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil || resp.StatusCode != 200 {
				t.Fatalf("response %v, %v", resp, err)
			}
			upc := <-up.conn
			// The sandbox goes away: its end of the connection closes first
			// (its processes die), then the broker ends the proxy.
			c.Close()
			if proto != "http" {
				// A tunnel passes the EOF on as a half-close.
				waitFor(t, up.readEnded, "the tunnel to pass the client's EOF on")
			}
			if !h.stop() {
				t.Fatal("the proxy still holds a connection to a stalled upstream after its sandbox ended")
			}
			waitFor(t, up.readEnded, "the upstream to see its connection closed")
			if _, err := upc.Write([]byte("late")); !errors.Is(err, syscall.EPIPE) {
				t.Fatalf("writing to the proxy's end after the sandbox ended: %v, want EPIPE (the proxy must close, not half-close)", err)
			}
		})
	}
}
