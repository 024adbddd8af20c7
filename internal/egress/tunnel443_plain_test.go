package egress

import (
	"io"
	"slices"
	"testing"
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

	h2 := newHarness(t, nil)
	rec2 := newHostRecorder()
	h2.dial.serve = rec2.serve
	c = h2.conn()
	socksOpen(t, c, socksName("a.test", 443))
	io.WriteString(c, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
	c.CloseWrite()
	io.ReadAll(c)
	if d := h2.next(); d.Allowed {
		t.Fatalf("HTTP/2 preface on port 443: Decision = %+v, want refused", d)
	}
}
