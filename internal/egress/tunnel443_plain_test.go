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

	// HTTP/2's cleartext preface, and a request behind blank lines or
	// spaces, which some servers skip: refused, nothing goes upstream.
	for _, send := range []string{
		"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
		"\r\n" + requests,
		"\n\n" + requests,
		" " + requests,
	} {
		h := newHarness(t, nil)
		rec := newHostRecorder()
		h.dial.serve = rec.serve
		c := h.conn()
		socksOpen(t, c, socksName("a.test", 443))
		io.WriteString(c, send)
		c.CloseWrite()
		io.ReadAll(c)
		if d := h.next(); d.Allowed {
			t.Errorf("%q on port 443: Decision = %+v, want refused", send[:8], d)
		}
		h.stop()
		if got := rec.all(); len(got) > 0 {
			t.Errorf("%q on port 443: upstream saw %q", send[:8], got)
		}
	}
}
