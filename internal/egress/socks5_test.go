package egress

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var (
	greeting   = []byte{5, 1, 0}
	methodOK   = []byte{5, 0}
	socksOK    = []byte{5, 0, 0, 1, 0, 0, 0, 0, 0, 0}
	socksErr   = func(rep byte) []byte { return []byte{5, rep, 0, 1, 0, 0, 0, 0, 0, 0} }
	afterGreet = func(rep byte) []byte { return append(append([]byte{}, methodOK...), socksErr(rep)...) }
)

func socksName(name string, port int) []byte {
	b := []byte{5, 1, 0, 3, byte(len(name))}
	b = append(b, name...)
	return binary.BigEndian.AppendUint16(b, uint16(port))
}

func socksIP(ip string, port int) []byte {
	a := netip.MustParseAddr(ip)
	var b []byte
	if a.Is4() {
		b = append([]byte{5, 1, 0, 1}, a.AsSlice()...)
	} else {
		b = append([]byte{5, 1, 0, 4}, a.AsSlice()...)
	}
	return binary.BigEndian.AppendUint16(b, uint16(port))
}

func cat(bs ...[]byte) []byte { return bytes.Join(bs, nil) }

func TestSOCKS5Refusals(t *testing.T) {
	tests := []struct {
		name    string
		send    []byte
		want    []byte // everything the proxy writes before closing
		lookups int
		dialed  []string
		reason  string // substring of the Decision's reason; "" = no Decision
		host    string // the Decision's Host, when set
		dialErr error
	}{
		{name: "version 4", send: []byte{4, 1, 0, 80, 127, 0, 0, 1, 0}, want: []byte{}},
		{name: "no methods", send: []byte{5, 0}, want: []byte{5, 0xff}},
		{name: "GSSAPI only", send: []byte{5, 1, 1}, want: []byte{5, 0xff}},
		{name: "user/pass only", send: []byte{5, 1, 2}, want: []byte{5, 0xff}},
		{name: "request version 4", send: cat(greeting, []byte{4, 1, 0, 1, 1, 2, 3, 4, 0, 80}), want: methodOK},
		{name: "BIND", send: cat(greeting, []byte{5, 2, 0, 1, 1, 2, 3, 4, 0, 80}), want: afterGreet(7)},
		{name: "UDP ASSOCIATE", send: cat(greeting, []byte{5, 3, 0, 1, 1, 2, 3, 4, 0, 80}), want: afterGreet(7)},
		{name: "CMD 9", send: cat(greeting, []byte{5, 9, 0, 1, 1, 2, 3, 4, 0, 80}), want: afterGreet(7)},
		{name: "RSV 1", send: cat(greeting, []byte{5, 1, 1, 3, 6, 'a', '.', 't', 'e', 's', 't', 0, 80}), want: afterGreet(7)},
		{name: "ATYP 2", send: cat(greeting, []byte{5, 1, 0, 2, 1, 2, 3, 4, 0, 80}), want: afterGreet(8)},
		{name: "ATYP 5", send: cat(greeting, []byte{5, 1, 0, 5, 1, 2, 3, 4, 0, 80}), want: afterGreet(8)},
		{name: "empty name", send: cat(greeting, []byte{5, 1, 0, 3, 0, 0, 80}), want: afterGreet(1), reason: "malformed"},
		{name: "garbage name", send: cat(greeting, socksName("a b\x00", 80)), want: afterGreet(1), reason: "malformed", host: `a b\x00`},
		{name: "name that drives a terminal", send: cat(greeting, socksName("a\x1b]52;c;aGk=\x07\r\u202e\xff", 80)), want: afterGreet(1), reason: "malformed",
			host: `a\x1b]52;c;aGk=\a\r\u202e\xff`},
		{name: "port 0", send: cat(greeting, socksName("a.test", 0)), want: afterGreet(1), reason: "malformed"},
		{name: "port 0 IP", send: cat(greeting, socksIP("93.184.216.34", 0)), want: afterGreet(1), reason: "malformed"},
		{name: "denied name", send: cat(greeting, socksName("CANARY.evil.test", 443)), want: afterGreet(2), reason: "not granted"},
		{name: "port not granted", send: cat(greeting, socksName("a.test", 22)), want: afterGreet(2), reason: "not granted"},
		{name: "port 6379", send: cat(greeting, socksName("a.test", 6379)), want: afterGreet(2), reason: "not granted"},
		{name: "unresolvable", send: cat(greeting, socksName("gone.test", 80)), want: afterGreet(4), lookups: 1, reason: "did not resolve"},
		{name: "resolves to ::1", send: cat(greeting, socksName("lo.test", 80)), want: afterGreet(2), lookups: 1, reason: "::1 is not public"},
		{name: "mixed answer", send: cat(greeting, socksName("mixed.test", 80)), want: afterGreet(2), lookups: 1, reason: "10.0.0.1 is not public"},
		{name: "private without allowance", send: cat(greeting, socksName("priv.test", 80)), want: afterGreet(2), lookups: 1, reason: "private"},
		{name: "IPv4 loopback literal", send: cat(greeting, socksIP("127.0.0.1", 80)), want: afterGreet(2), reason: "loopback"},
		{name: "IPv6 loopback literal", send: cat(greeting, socksIP("::1", 80)), want: afterGreet(2), reason: "loopback"},
		{name: "mapped loopback literal", send: cat(greeting, socksIP("::ffff:127.0.0.1", 80)), want: afterGreet(2), reason: "loopback"},
		{name: "IP literal not granted", send: cat(greeting, socksIP("8.8.8.8", 80)), want: afterGreet(2), reason: "not granted"},
		{name: "decimal loopback name", send: cat(greeting, socksName("2130706433", 80)), want: afterGreet(1), reason: "malformed"},
		{name: "hex loopback name", send: cat(greeting, socksName("0x7f000001", 80)), want: afterGreet(1), reason: "malformed"},
		{name: "octal loopback name", send: cat(greeting, socksName("0177.0.0.1", 80)), want: afterGreet(1), reason: "malformed"},
		{name: "short loopback name", send: cat(greeting, socksName("127.1", 80)), want: afterGreet(1), reason: "malformed"},
		{name: "zero name", send: cat(greeting, socksName("0", 80)), want: afterGreet(1), reason: "malformed"},
		{name: "zoned literal name", send: cat(greeting, socksName("fe80::1%lo", 80)), want: afterGreet(1), reason: "malformed"},
		{name: "dial refused", send: cat(greeting, socksName("a.test", 80)), want: afterGreet(5), lookups: 1,
			dialed: []string{"93.184.216.34:80"}, dialErr: syscall.ECONNREFUSED, reason: "refused"},
		{name: "dial net unreachable", send: cat(greeting, socksName("a.test", 80)), want: afterGreet(3), lookups: 1,
			dialed: []string{"93.184.216.34:80"}, dialErr: syscall.ENETUNREACH, reason: "unreachable"},
		{name: "dial timeout", send: cat(greeting, socksName("a.test", 80)), want: afterGreet(4), lookups: 1,
			dialed: []string{"93.184.216.34:80"}, dialErr: &net.OpError{Op: "dial", Err: timeoutErr{}}, reason: "timed out"},
		{name: "dial other", send: cat(greeting, socksName("a.test", 80)), want: afterGreet(1), lookups: 1,
			dialed: []string{"93.184.216.34:80"}, dialErr: io.ErrUnexpectedEOF, reason: "dial failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			if tt.dialErr != nil {
				h.dial.errs = map[string]error{"93.184.216.34:80": tt.dialErr}
			}
			c := h.conn()
			if _, err := c.Write(tt.send); err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(c)
			if err != nil {
				t.Fatalf("reading the reply: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("reply (-want +got):\n%s", diff)
			}
			if n := h.res.callCount(); n != tt.lookups {
				t.Errorf("resolver called %d times, want %d", n, tt.lookups)
			}
			if diff := cmp.Diff(tt.dialed, h.dial.dialed()); diff != "" {
				t.Errorf("dialled (-want +got):\n%s", diff)
			}
			if tt.reason != "" {
				d := h.next()
				if d.Allowed || d.Proto != "socks5" || !strings.Contains(d.Reason, tt.reason) {
					t.Errorf("Decision = %+v, want a socks5 denial mentioning %q", d, tt.reason)
				}
				if tt.host != "" && d.Host != tt.host {
					t.Errorf("Decision.Host = %q, want %q", d.Host, tt.host)
				}
			}
		})
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

// socksOpen performs a SOCKS5 CONNECT and checks for success.
func socksOpen(t *testing.T, c net.Conn, req []byte) {
	t.Helper()
	if _, err := c.Write(cat(greeting, req)); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(methodOK)+len(socksOK))
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatalf("reading the reply: %v", err)
	}
	if diff := cmp.Diff(cat(methodOK, socksOK), got); diff != "" {
		t.Fatalf("reply (-want +got):\n%s", diff)
	}
}

func TestSOCKS5Success(t *testing.T) {
	tests := []struct {
		name   string
		req    []byte
		dialed string
		host   string
		rule   string
	}{
		{"name", socksName("a.test", 7), "93.184.216.34:7", "a.test", "host a.test:7"},
		{"name with dot and case", socksName("A.Test.", 7), "93.184.216.34:7", "a.test", "host a.test:7"},
		{"IPv6 answer", socksName("v6.test", 7), "[2606:2800:220:1:248:1893:25c8:1946]:7", "v6.test", "host v6.test:7"},
		{"granted public IP", socksIP("93.184.216.34", 7), "93.184.216.34:7", "93.184.216.34", "host 93.184.216.34:7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			c := h.conn()
			socksOpen(t, c, tt.req)
			assertEcho(t, c, "hello through the tunnel")
			d := h.next()
			want := Decision{Sandbox: "sb1", Proto: "socks5", Host: tt.host, Port: 7, Allowed: true,
				Rule: tt.rule, Reason: "ok", Addr: netip.MustParseAddrPort(tt.dialed).Addr()}
			d.Time = time.Time{}
			if diff := cmp.Diff(want, d, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
				t.Errorf("Decision (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{tt.dialed}, h.dial.dialed()); diff != "" {
				t.Errorf("dialled (-want +got):\n%s", diff)
			}
		})
	}
}

// assertEcho sends msg, half-closes, and expects exactly msg back then EOF.
func assertEcho(t *testing.T, c *net.UnixConn, msg string) {
	t.Helper()
	if _, err := io.WriteString(c, msg); err != nil {
		t.Fatal(err)
	}
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != msg {
		t.Fatalf("echo = %q, want %q", got, msg)
	}
}

func TestSOCKS5PrivateAllowed(t *testing.T) {
	h := newHarness(t, nil)
	h.policy.allowPrivate("10.1.2.0/24")
	c := h.conn()
	socksOpen(t, c, socksName("priv.test", 7))
	assertEcho(t, c, "x")
	d := h.next()
	if !d.Allowed || d.Rule != "host priv.test:7; private cidr 10.1.2.0/24" || !strings.Contains(d.Reason, "non-public") {
		t.Fatalf("Decision = %+v", d)
	}
	// The same allowance does not cover a private address outside it.
	h.policy.grant("lo.test:7")
	c2 := h.conn()
	c2.Write(cat(greeting, socksName("lo.test", 7)))
	got, _ := io.ReadAll(c2)
	if diff := cmp.Diff(afterGreet(2), got); diff != "" {
		t.Fatalf("reply (-want +got):\n%s", diff)
	}
}

func TestSOCKS5DripFeed(t *testing.T) {
	h := newHarness(t, nil)
	c := h.conn()
	req := cat(greeting, socksName("a.test", 7))
	got := []byte{}
	for i, b := range req {
		if _, err := c.Write([]byte{b}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
		if i == len(greeting)-1 {
			buf := make([]byte, 2)
			io.ReadFull(c, buf)
			got = append(got, buf...)
		}
	}
	buf := make([]byte, len(socksOK))
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(cat(methodOK, socksOK), append(got, buf...)); diff != "" {
		t.Fatalf("reply (-want +got):\n%s", diff)
	}
	assertEcho(t, c, "drip")
}

// TestSOCKS5EarlyPayload sends greeting, request and payload in one write: the
// payload reaches upstream only after the dial, and never on a refusal.
func TestSOCKS5EarlyPayload(t *testing.T) {
	t.Run("allowed", func(t *testing.T) {
		h := newHarness(t, nil)
		c := h.conn()
		c.Write(cat(greeting, socksName("a.test", 7), []byte("GET / HTTP/1.0\r\n\r\n")))
		c.CloseWrite()
		got, err := io.ReadAll(c)
		if err != nil {
			t.Fatal(err)
		}
		if want := string(cat(methodOK, socksOK)) + "GET / HTTP/1.0\r\n\r\n"; string(got) != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	})
	t.Run("denied", func(t *testing.T) {
		h := newHarness(t, nil)
		upstream := make(chan []byte, 1)
		h.dial.serve = func(c net.Conn) { b, _ := io.ReadAll(c); upstream <- b; c.Close() }
		c := h.conn()
		c.Write(cat(greeting, socksName("evil.test", 7), []byte("payload")))
		got, _ := io.ReadAll(c)
		if diff := cmp.Diff(afterGreet(2), got); diff != "" {
			t.Fatalf("reply (-want +got):\n%s", diff)
		}
		if d := h.dial.dialed(); len(d) != 0 {
			t.Fatalf("dialled %v", d)
		}
	})
}

func TestSOCKS5HandshakeLimits(t *testing.T) {
	t.Run("timeout", func(t *testing.T) {
		h := newHarness(t, func(o *Options) { o.HandshakeTimeout = 100 * time.Millisecond })
		c := h.conn()
		c.Write([]byte{5, 1}) // never finishes the greeting
		start := time.Now()
		got, _ := io.ReadAll(c)
		// A cap, not a timing: the handshake timer, not the 5-minute idle
		// one, ended the connection.
		if len(got) != 0 || time.Since(start) > 60*time.Second {
			t.Fatalf("got %q after %v", got, time.Since(start))
		}
	})
	t.Run("size", func(t *testing.T) {
		h := newHarness(t, func(o *Options) { o.MaxHandshakeBytes = 8 })
		c := h.conn()
		c.Write(cat(greeting, socksName("a.test", 80)))
		got, _ := io.ReadAll(c)
		if diff := cmp.Diff(methodOK, got); diff != "" {
			t.Fatalf("reply (-want +got):\n%s", diff)
		}
		if len(h.dial.dialed()) != 0 {
			t.Fatal("dialled past the handshake cap")
		}
	})
}

// TestDNSRebinding: the resolver answers public first, loopback after; each
// connection resolves once and dials exactly what it checked.
func TestDNSRebinding(t *testing.T) {
	h := newHarness(t, nil)
	c := h.conn()
	socksOpen(t, c, socksName("rb.test", 7))
	assertEcho(t, c, "first")
	c2 := h.conn()
	c2.Write(cat(greeting, socksName("rb.test", 7)))
	got, _ := io.ReadAll(c2)
	if diff := cmp.Diff(afterGreet(2), got); diff != "" {
		t.Fatalf("second reply (-want +got):\n%s", diff)
	}
	if n := h.res.callCount(); n != 2 {
		t.Fatalf("resolver called %d times, want once per connection (2)", n)
	}
	if diff := cmp.Diff([]string{"93.184.216.34:7"}, h.dial.dialed()); diff != "" {
		t.Fatalf("dialled (-want +got):\n%s", diff)
	}
}

// permissivePolicy grants every host and every private address.
type permissivePolicy struct{}

func (permissivePolicy) AllowHost(string, int) (string, bool)        { return "any", true }
func (permissivePolicy) AllowPrivate(netip.Addr, int) (string, bool) { return "any", true }

// TestZonedAnswerNeverAllowed: even a policy that allows every private
// address cannot make the proxy dial a zoned or invalid answer.
func TestZonedAnswerNeverAllowed(t *testing.T) {
	for _, ans := range [][]netip.Addr{
		{netip.MustParseAddr("fe80::1%lo")},
		{netip.MustParseAddr("93.184.216.34"), {}},
	} {
		h := newHarness(t, func(o *Options) { o.Policy = permissivePolicy{} })
		h.res.answer("z.test", ans)
		c := h.conn()
		c.Write(cat(greeting, socksName("z.test", 80)))
		got, _ := io.ReadAll(c)
		if diff := cmp.Diff(afterGreet(2), got); diff != "" {
			t.Errorf("%v: reply (-want +got):\n%s", ans, diff)
		}
		if d := h.dial.dialed(); len(d) != 0 {
			t.Errorf("%v: dialled %v", ans, d)
		}
	}
}

// namedPrivatePolicy lists priv.test and lo.test as private names (PrivateNamer).
type namedPrivatePolicy struct{ *fakePolicy }

func (namedPrivatePolicy) AllowPrivateName(host string, port int) (string, bool) {
	if (host == "priv.test" || host == "lo.test" || host == "zero.test") && port == 80 {
		return "private name " + host, true
	}
	return "", false
}

func TestPrivateName(t *testing.T) {
	tests := []struct {
		name   string
		req    []byte
		rep    byte
		dialed []string
		rule   string
	}{
		{"listed name to private", socksName("priv.test", 80), 0, []string{"10.1.2.3:80"}, "host priv.test:80; private private name priv.test"},
		{"listed name to loopback", socksName("lo.test", 80), 0, []string{"[::1]:80"}, "host lo.test:80; private private name lo.test"},
		{"listed name to unspecified", socksName("zero.test", 80), 2, nil, ""},
		{"unlisted name to private", socksName("mixed.test", 80), 2, nil, ""},
		{"IP literal is not a name", socksIP("10.1.2.3", 80), 2, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, func(o *Options) { o.Policy = namedPrivatePolicy{o.Policy.(*fakePolicy)} })
			h.policy.grant("zero.test:80")
			h.res.answer("zero.test", []netip.Addr{netip.IPv4Unspecified()})
			c := h.conn()
			c.Write(cat(greeting, tt.req))
			got := make([]byte, 12)
			if _, err := io.ReadFull(c, got); err != nil {
				t.Fatal(err)
			}
			if got[3] != tt.rep {
				t.Fatalf("REP %#x, want %#x", got[3], tt.rep)
			}
			if diff := cmp.Diff(tt.dialed, h.dial.dialed()); diff != "" {
				t.Errorf("dialled (-want +got):\n%s", diff)
			}
			if d := h.next(); tt.rep == 0 && d.Rule != tt.rule {
				t.Errorf("Rule %q, want %q", d.Rule, tt.rule)
			}
		})
	}
}
