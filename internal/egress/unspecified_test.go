package egress

import (
	"io"
	"net"
	"strconv"
	"testing"
)

// TestUnspecifiedAddressNeverDialled: connecting to the unspecified
// address (0.0.0.0, ::) reaches the host's own loopback on Linux. The
// proxy refused it as the answer of a name listed as private, but dialled
// it when the grant's private addresses held it ("0.0.0.0/8", which reads
// as "this network", or the address itself), though allowPrivate says an
// unspecified address is never allowed: a sandbox granted 0.0.0.0/8 and
// not loopback reached a service listening on 127.0.0.1 through a tunnel
// to 0.0.0.0. The unspecified address is refused whatever the grant says.
func TestUnspecifiedAddressNeverDialled(t *testing.T) {
	for _, tt := range []struct{ listen, target, private string }{
		{"127.0.0.1:0", "0.0.0.0", "0.0.0.0/8"},
		{"[::1]:0", "::", "::/128"},
	} {
		l, err := net.Listen("tcp", tt.listen)
		if err != nil {
			t.Logf("%s: %v", tt.listen, err)
			continue
		}
		defer l.Close()
		reached := make(chan struct{}, 1)
		go func() {
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				reached <- struct{}{}
				c.Close()
			}
		}()
		port := l.Addr().(*net.TCPAddr).Port
		h := newHarness(t, func(o *Options) { o.Dialer = nil })
		h.policy.grant(net.JoinHostPort(tt.target, strconv.Itoa(port)))
		h.policy.allowPrivate(tt.private)
		c := h.conn()
		c.Write(cat(greeting, socksIP(tt.target, port)))
		io.ReadAll(c)
		d := h.next()
		h.stop()
		if d.Allowed {
			t.Errorf("%s:%d (private %s): Decision = %+v, want refused", tt.target, port, tt.private, d)
		}
		select {
		case <-reached:
			t.Errorf("a tunnel to %s:%d reached the listener on %s", tt.target, port, l.Addr())
		default:
		}
	}
}
