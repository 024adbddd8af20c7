package egress

import (
	"io"
	"net"
	"strings"
	"sync"
	"testing"
)

// rawRecorder is an upstream that keeps every byte it is sent, as a lenient
// front (HAProxy reads a method ended by a tab as one ended by a space) would
// parse them, and reports them once the connection ends.
type rawRecorder struct {
	mu  sync.Mutex
	got []string
}

func (r *rawRecorder) serve(c net.Conn) {
	defer c.Close()
	b, _ := io.ReadAll(c)
	r.mu.Lock()
	r.got = append(r.got, string(b))
	r.mu.Unlock()
}

func (r *rawRecorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

// TestTunnelToPort443MethodEndedByWhiteSpace: a request line whose method
// ends with white space other than a space (a tab, a vertical tab, a form
// feed, a bare CR) was taken for bytes no request starts with, and relayed
// unread through a tunnel to a.test:443 with its Host: evil.test. RFC 9112
// §3 lets a server read any white space as the separator, and HAProxy, the
// kind of front that takes TLS and HTTP on one port, reads a tab as one: it
// routes such a request by its Host header. Each must be read as a request
// (and refused, since it is not one the proxy forwards), nothing upstream.
func TestTunnelToPort443MethodEndedByWhiteSpace(t *testing.T) {
	for _, sep := range []string{"\t", "\v", "\f", "\r"} {
		send := "GET" + sep + "/" + sep + "HTTP/1.1\r\nHost: evil.test\r\n\r\n"
		h := newHarness(t, nil)
		rec := &rawRecorder{}
		h.dial.serve = rec.serve
		c := h.conn()
		socksOpen(t, c, socksName("a.test", 443))
		io.WriteString(c, send)
		c.CloseWrite()
		io.ReadAll(c)
		d := h.next()
		h.stop()
		if d.Allowed {
			t.Errorf("method ended by %q: Decision = %+v, want refused", sep, d)
		}
		for _, got := range rec.all() {
			if strings.Contains(got, "evil.test") {
				t.Errorf("method ended by %q: upstream saw %q", sep, got)
			}
		}
	}
}
