package egress

import (
	"io"
	"net"
	"sync"
	"testing"
)

// sslv2Hello returns a ClientHello in the SSL 2.0 compatible format (RFC
// 5246 Appendix E.2) offering TLS 1.0: a two-byte length with the high bit
// set, then message type 1. It has no extensions, so no server name, and
// OpenSSL servers still accept it to negotiate TLS up to 1.2.
func sslv2Hello() []byte {
	body := []byte{1, 3, 1, 0, 3, 0, 0, 0, 16} // type, version, cipher_spec, session id, challenge lengths
	body = append(body, 0x00, 0x00, 0x2f)      // TLS_RSA_WITH_AES_128_CBC_SHA
	body = append(body, make([]byte, 16)...)
	return append([]byte{0x80 | byte(len(body)>>8), byte(len(body))}, body...)
}

// TestTunnelToPort443NameRefusesWhatNamesNoServer: a front that routes
// port 443 by a ClientHello's server name (HAProxy's req.ssl_sni,
// sniproxy) without terminating TLS sends a stream it finds no name in
// to its default site, which may be another than the granted one. The
// proxy refused a TLS ClientHello without a server name on a tunnel to a
// name, but let through unread every stream whose first byte starts
// neither a TLS record nor an HTTP request: an SSL 2.0 compatible
// ClientHello (which has no extensions, and which OpenSSL servers still
// take), or any other bytes, reached the front's default site through a
// tunnel to a.test:443. On a tunnel to a name, port 443 carries a TLS
// ClientHello naming it or an HTTP request, nothing else.
func TestTunnelToPort443NameRefusesWhatNamesNoServer(t *testing.T) {
	for _, tt := range []struct {
		name  string
		bytes []byte
	}{
		{"SSL 2.0 compatible ClientHello", sslv2Hello()},
		{"binary protocol", []byte{0x00, 0x0e, 0x38, 0x01, 0x02, 0x03, 0x04}},
		{"non-ASCII", []byte("\xffhello")},
	} {
		h := newHarness(t, nil)
		var mu sync.Mutex
		var routed []string
		h.dial.serve = func(c net.Conn) {
			defer c.Close()
			b, _ := io.ReadAll(io.LimitReader(c, int64(len(tt.bytes))))
			if len(b) == 0 {
				return // refused: nothing reached the front
			}
			mu.Lock()
			routed = append(routed, "default") // no server name to route by
			mu.Unlock()
		}
		c := h.conn()
		socksOpen(t, c, socksName("a.test", 443))
		c.Write(tt.bytes)
		c.CloseWrite()
		io.ReadAll(c)
		d := h.next()
		h.stop()
		if d.Allowed {
			t.Errorf("%s: Decision = %+v, want refused", tt.name, d)
		}
		mu.Lock()
		for _, site := range routed {
			t.Errorf("%s: a tunnel to a.test:443 reached the front's %s site", tt.name, site)
		}
		mu.Unlock()
	}
}
