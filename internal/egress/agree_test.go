package egress

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/hostrule"
)

// The grant and the proxy must decide the same for every host a client can
// ask for: the grant by AllowHost, AllowPrivate and AllowPrivateName as its
// documentation composes them (a granted host, each of whose addresses is
// public or explicitly private), the proxy by parsing the request's host and
// checking it against that grant as its Policy. A host the proxy reads
// differently from the grant (an address where the grant sees a bad name, a
// public address where the grant's rule sees a private one) is a hole.

// agreeFlags is the grant both sides decide by.
var agreeFlags = grant.Flags{
	AllowHosts: []string{"a.test", "*.b.test", "93.184.216.34", "api.example.com:8443", "*.bücher.example", "[2606:4700::1111]"},
	Private:    []string{"127.0.0.1", "10.0.0.0/8", "mirror.internal", "[fd00::1]:8080"},
}

// anyResolver answers every name with the same addresses.
type anyResolver struct{ addrs []netip.Addr }

func (r anyResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return r.addrs, nil
}

func agreeGrant(t testing.TB) *grant.Grant {
	g, err := grant.FromFlags(t.TempDir(), agreeFlags)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// grantDecides is the grant's decision on a client asking for host:port,
// where a name resolves to addrs.
func grantDecides(g *grant.Grant, host string, port int, addrs []netip.Addr) bool {
	if _, ok := g.AllowHost(host, port); !ok {
		return false
	}
	literal := false
	if ip, err := netip.ParseAddr(host); err == nil {
		addrs, literal = []netip.Addr{ip}, true
	}
	if len(addrs) == 0 {
		return false
	}
	for _, a := range addrs {
		a = a.Unmap()
		if hostrule.IsPublic(a) {
			continue
		}
		if _, ok := g.AllowPrivate(a, port); ok {
			continue
		}
		if _, ok := g.AllowPrivateName(host, port); ok && !literal && a.IsValid() && !a.IsUnspecified() {
			continue
		}
		return false
	}
	return true
}

// proxyDecides is the proxy's decision on a request for host:port, with
// every name resolving to addrs.
func proxyDecides(t testing.TB, g *grant.Grant, host string, port int, addrs []netip.Addr) bool {
	tg, err := parseTarget(host, port)
	if err != nil {
		return false
	}
	p := New(&Options{Policy: g, Resolver: anyResolver{addrs}, Dialer: &pipeDialer{}})
	conn, _, _ := p.open(context.Background(), "socks5", tg)
	if conn == nil {
		return false
	}
	conn.Close()
	return true
}

func TestGrantAndProxyAgree(t *testing.T) {
	g := agreeGrant(t)
	ips := func(s ...string) []netip.Addr {
		var out []netip.Addr
		for _, x := range s {
			out = append(out, netip.MustParseAddr(x))
		}
		return out
	}
	answers := [][]netip.Addr{
		ips("93.184.216.34"),
		ips("127.0.0.1"),
		ips("192.168.1.1"),
		ips("10.0.0.5"),
		ips("8.8.8.8", "10.0.0.5"),
		ips("8.8.8.8", "169.254.169.254"),
		ips("0.0.0.0"),
		ips("::"),
		ips("::ffff:127.0.0.1"),
		ips("64:ff9b::808:808"),
		ips("64:ff9b::7f00:1"),
		ips("2002:808:808::1"),
		ips("::8.8.8.8"),
		ips("2606:4700::1111"),
		ips("fd00::1"),
	}
	hosts := []string{
		"a.test", "A.TEST.", "x.b.test", "X.Y.B.Test.", "b.test", "evilb.test", "a.test.evil",
		"shop.bücher.example", "shop.xn--bcher-kva.example", "api.example.com",
		"mirror.internal", "MIRROR.internal.", "localhost", "x.localhost",
		"93.184.216.34", "::ffff:93.184.216.34", "93.184.216.35",
		"127.0.0.1", "127.0.0.1.", "127.1", "0x7f.1", "0x7f000001", "2130706433", "0177.0.0.1",
		"127.0.1", "１２７.０.０.１", "::ffff:127.0.0.1", "::ffff:7f00:1", "::127.0.0.1",
		"64:ff9b::7f00:1", "2002:7f00:1::1", "10.1.2.3", "0xa.1.2.3", "012.1.2.3", "167838211",
		"fd00::1", "fe80::1%lo", "2606:4700::1111", "::", "0", "0.0.0.0",
		"a.test.0x1f", "x.b.0x1f", "x.b.test.0x", "under_score.b.test", "a..test", "",
	}
	for _, host := range hosts {
		for _, port := range []int{80, 443, 8080, 8443, 22} {
			for _, addrs := range answers {
				gd := grantDecides(g, host, port, addrs)
				pd := proxyDecides(t, g, host, port, addrs)
				if gd != pd {
					t.Errorf("%q port %d resolving to %v: grant allows %v, proxy allows %v", host, port, addrs, gd, pd)
				}
			}
		}
	}
}

// FuzzGrantProxyAgree checks TestGrantAndProxyAgree's property for any host,
// port and answer; its seeds run in every go test.
func FuzzGrantProxyAgree(f *testing.F) {
	f.Add("a.test", uint16(443), "93.184.216.34")
	f.Add("0x7f.1", uint16(443), "127.0.0.1")
	f.Add("127.1", uint16(80), "")
	f.Add("mirror.internal", uint16(443), "192.168.1.1")
	f.Add("x.b.test", uint16(443), "64:ff9b::808:808")
	f.Add("x.b.test", uint16(443), "2002:808:808::1")
	f.Add("::ffff:127.0.0.1", uint16(443), "")
	f.Add("::127.0.0.1", uint16(443), "")
	f.Add("fd00::1", uint16(8080), "")
	f.Add("１２７.０.０.１", uint16(443), "")
	f.Add("x.b.0x1f", uint16(443), "8.8.8.8")
	f.Add("shop.bücher.example.", uint16(443), "8.8.8.8,10.0.0.1")
	g := agreeGrant(f)
	f.Fuzz(func(t *testing.T, host string, port uint16, answer string) {
		if strings.HasPrefix(host, "[") {
			t.Skip("brackets are the request syntax's, removed before the host is read")
		}
		var addrs []netip.Addr
		for _, s := range strings.Split(answer, ",") {
			if a, err := netip.ParseAddr(s); err == nil {
				addrs = append(addrs, a)
			}
		}
		gd := grantDecides(g, host, int(port), addrs)
		pd := proxyDecides(t, g, host, int(port), addrs)
		if gd != pd {
			t.Fatalf("%q port %d resolving to %v: grant allows %v, proxy allows %v", host, port, addrs, gd, pd)
		}
	})
}

// A network.private entry's port holds however its address is reached: a
// granted name (on the port network.hosts gives it) that resolves to a
// private address is refused unless an entry grants that address on that
// port too. Before, only the address was matched, so a name granted on
// port 22 that resolved to 127.0.0.1 reached 127.0.0.1:22 under a grant of
// 127.0.0.1:8080.
func TestPrivatePortHoldsThroughNames(t *testing.T) {
	g, err := grant.FromFlags(t.TempDir(), grant.Flags{
		AllowHosts: []string{"a.test:22", "b.test:8080", "c.test", "d.test:6379"},
		Private:    []string{"127.0.0.1:8080", "10.0.0.0/8"},
	})
	if err != nil {
		t.Fatal(err)
	}
	loop := []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	ten := []netip.Addr{netip.MustParseAddr("10.0.0.5")}
	for _, tt := range []struct {
		host  string
		port  int
		addrs []netip.Addr
		want  bool
	}{
		{"a.test", 22, loop, false},
		{"b.test", 8080, loop, true},
		{"c.test", 443, loop, false},
		{"c.test", 443, ten, true},
		{"c.test", 80, ten, true},
		{"d.test", 6379, ten, false},
		{"127.0.0.1", 8080, nil, true},
		{"127.0.0.1", 22, nil, false},
	} {
		if got := proxyDecides(t, g, tt.host, tt.port, tt.addrs); got != tt.want {
			t.Errorf("%s:%d resolving to %v: proxy allows %v, want %v", tt.host, tt.port, tt.addrs, got, tt.want)
		}
		if got := grantDecides(g, tt.host, tt.port, tt.addrs); got != tt.want {
			t.Errorf("%s:%d resolving to %v: grant allows %v, want %v", tt.host, tt.port, tt.addrs, got, tt.want)
		}
	}
}
