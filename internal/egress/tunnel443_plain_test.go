package egress

import (
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestTunnelToPort443ChecksPlainHTTP: a tunnel to a granted name on port
// 443 whose client speaks plain HTTP instead of TLS. A front that serves
// many names and takes both on one port (HAProxy or sslh telling TLS from
// HTTP by the first bytes, a server multiplexing the two) routes such a
// request by its Host header, so relaying the bytes would reach another
// site from the granted name's address, as on port 80. The request is
// forwarded as on port 80, with the checked name as its Host, one a
// tunnel; HTTP/2's cleartext preface is refused.
func TestTunnelToPort443ChecksPlainHTTP(t *testing.T) {
	const requests = "GET /1 HTTP/1.1\r\nHost: evil.test\r\n\r\n" +
		"GET /2 HTTP/1.1\r\nHost: evil.test\r\n\r\n"
	h := newHarness(t, nil)
	rec := newHostRecorder()
	h.dial.serve = rec.serve
	c := h.conn()
	socksOpen(t, c, socksName("a.test", 443))
	io.WriteString(c, requests)
	c.CloseWrite()
	io.ReadAll(c)
	if got, want := rec.all(), []string{"host a.test:443"}; !slices.Equal(got, want) {
		t.Fatalf("upstream saw %q, want %q", got, want)
	}
	if d := h.next(); !d.Allowed {
		t.Fatalf("Decision = %+v", d)
	}

	// HTTP/2's cleartext preface, and a request behind blank lines or
	// spaces, which some servers skip: refused, nothing goes upstream. A
	// method longer than any the proxy looks for is still read as one.
	for _, tt := range []struct {
		send    string
		refused bool
	}{
		{"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", true},
		{"\r\n" + requests, true},
		{"\n\n" + requests, true},
		{" " + requests, true},
		{strings.Repeat("X", 40) + " / HTTP/1.1\r\nHost: evil.test\r\n\r\n", false},
	} {
		h := newHarness(t, nil)
		rec := newHostRecorder()
		h.dial.serve = rec.serve
		c := h.conn()
		socksOpen(t, c, socksName("a.test", 443))
		io.WriteString(c, tt.send)
		c.CloseWrite()
		io.ReadAll(c)
		if d := h.next(); d.Allowed == tt.refused {
			t.Errorf("%q on port 443: Decision = %+v, want refused %v", tt.send[:8], d, tt.refused)
		}
		h.stop()
		for _, got := range rec.all() {
			if got != "host a.test:443" {
				t.Errorf("%q on port 443: upstream saw %q", tt.send[:8], got)
			}
		}
	}
}

// TestTunnelToPort443PausedMethod: a client that sends the start of a
// method, waits past the handshake deadline, then the rest of a request, is
// refused: it is not taken for a protocol the proxy relays unread.
func TestTunnelToPort443PausedMethod(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.HandshakeTimeout = 200 * time.Millisecond })
	rec := newHostRecorder()
	h.dial.serve = rec.serve
	c := h.conn()
	socksOpen(t, c, socksName("a.test", 443))
	io.WriteString(c, "GE")
	d := h.next() // the proxy decides once the deadline has passed
	io.WriteString(c, "T / HTTP/1.1\r\nHost: evil.test\r\n\r\n")
	c.CloseWrite()
	io.ReadAll(c)
	h.stop()
	if got := rec.all(); len(got) > 0 {
		t.Errorf("upstream saw %q", got)
	}
	if d.Allowed {
		t.Fatalf("Decision = %+v, want refused", d)
	}
}
