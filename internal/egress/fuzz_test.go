package egress

import (
	"bytes"
	"context"
	"math/rand/v2"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

// scriptConn is a client that sent exactly in and then half-closed; what the
// proxy writes is collected in out.
type scriptConn struct {
	in  *bytes.Reader
	mu  sync.Mutex
	out bytes.Buffer
}

func (c *scriptConn) Read(b []byte) (int, error) { return c.in.Read(b) }
func (c *scriptConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.Write(b)
}
func (c *scriptConn) Close() error                     { return nil }
func (c *scriptConn) LocalAddr() net.Addr              { return &net.UnixAddr{Name: "proxy", Net: "unix"} }
func (c *scriptConn) RemoteAddr() net.Addr             { return &net.UnixAddr{Name: "client", Net: "unix"} }
func (c *scriptConn) SetDeadline(time.Time) error      { return nil }
func (c *scriptConn) SetReadDeadline(time.Time) error  { return nil }
func (c *scriptConn) SetWriteDeadline(time.Time) error { return nil }

// pipeDialer records dials and returns a net.Pipe whose far end closes at once.
type pipeDialer struct {
	mu    sync.Mutex
	addrs []string
}

func (d *pipeDialer) DialContext(_ context.Context, _, address string) (net.Conn, error) {
	d.mu.Lock()
	d.addrs = append(d.addrs, address)
	d.mu.Unlock()
	a, b := net.Pipe()
	b.Close()
	return a, nil
}

// runScript feeds in to one proxy connection and checks the invariants that
// must hold for any input: nothing but granted names is resolved, nothing but
// checked addresses is dialled, and no success is reported without a dial.
func runScript(t *testing.T, in []byte) string {
	res := &fakeResolver{answers: map[string][][]netip.Addr{
		"a.test": {{netip.MustParseAddr("93.184.216.34")}},
	}}
	dial := &pipeDialer{}
	p := New(&Options{
		Policy: &fakePolicy{hosts: map[string]bool{
			"a.test:80": true, "a.test:443": true, "93.184.216.34:80": true,
		}},
		Resolver:         res,
		Dialer:           dial,
		HandshakeTimeout: time.Second,
		IdleTimeout:      time.Second,
	})
	c := &scriptConn{in: bytes.NewReader(in)}
	p.handle(context.Background(), c)
	out := c.out.String()

	for _, call := range res.calls {
		if call != "ip a.test" {
			t.Fatalf("resolved %q", call)
		}
	}
	for _, a := range dial.addrs {
		if a != "93.184.216.34:80" && a != "93.184.216.34:443" {
			t.Fatalf("dialled %q", a)
		}
	}
	if len(dial.addrs) > 1 {
		t.Fatalf("dialled %d times", len(dial.addrs))
	}
	success := strings.HasPrefix(out, "\x05\x00\x05\x00") || strings.HasPrefix(out, "HTTP/1.1 200")
	if success && len(dial.addrs) == 0 {
		t.Fatalf("success reply %q without a dial", out)
	}
	return out
}

func FuzzSOCKS5Handshake(f *testing.F) {
	f.Add([]byte{5, 1, 0, 5, 1, 0, 3, 6, 'a', '.', 't', 'e', 's', 't', 0, 80})
	f.Add([]byte{5, 1, 0, 5, 1, 0, 1, 93, 184, 216, 34, 0, 80, 'h', 'i'})
	f.Add([]byte{5, 0})
	f.Add([]byte{5, 1, 1})
	f.Add([]byte{4, 1, 0, 80, 127, 0, 0, 1, 0})
	f.Add([]byte{5, 1, 0, 5, 2, 0, 1, 127, 0, 0, 1, 0, 80})
	f.Add([]byte{5, 1, 0, 5, 1, 0, 3, 10, '2', '1', '3', '0', '7', '0', '6', '4', '3', '3', 0, 80})
	f.Fuzz(func(t *testing.T, in []byte) {
		out := runScript(t, in)
		if len(in) > 0 && in[0] == 5 && len(out) > 0 && out[0] != 5 {
			t.Fatalf("SOCKS5 client got %q", out)
		}
	})
}

func FuzzHTTPConnect(f *testing.F) {
	f.Add([]byte("CONNECT a.test:443 HTTP/1.1\r\nHost: a.test\r\n\r\n"))
	f.Add([]byte("CONNECT 2130706433:80 HTTP/1.1\r\n\r\n"))
	f.Add([]byte("CONNECT [::ffff:127.0.0.1]:80 HTTP/1.1\r\n\r\n"))
	f.Add([]byte("GET http://a.test/x HTTP/1.1\r\nConnection: close\r\n\r\n"))
	f.Add([]byte("GET http://93.184.216.34/ HTTP/1.1\r\n\r\n"))
	f.Add([]byte("CONNECT a.test:443:1 HTTP/1.1\r\n\r\n"))
	f.Fuzz(func(t *testing.T, in []byte) {
		out := runScript(t, in)
		if len(in) > 0 && in[0] != 4 && in[0] != 5 && out != "" && !strings.HasPrefix(out, "HTTP/1.1 ") {
			t.Fatalf("HTTP client got %q", out)
		}
	})
}

// TestSOCKS5Random is hostile case 44's 500 seeded random byte strings, each
// with and without a valid greeting in front.
func TestSOCKS5Random(t *testing.T) {
	r := rand.New(rand.NewPCG(44, 44))
	for i := 0; i < 500; i++ {
		b := make([]byte, r.IntN(64))
		for j := range b {
			b[j] = byte(r.UintN(256))
		}
		runScript(t, b)
		runScript(t, append([]byte{5, 1, 0}, b...))
		runScript(t, append([]byte{5, 1, 0, 5, 1, 0}, b...))
	}
}
