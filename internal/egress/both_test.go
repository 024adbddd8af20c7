package egress

import (
	"net/netip"
	"testing"
)

// fixed is a Policy (and PrivateNamer) that allows the hosts and addresses
// it lists, on any port.
type fixed struct {
	hosts, names map[string]bool
	addrs        map[netip.Addr]bool
}

func (f fixed) AllowHost(h string, _ int) (string, bool) { return "host " + h, f.hosts[h] }
func (f fixed) AllowPrivate(a netip.Addr, _ int) (string, bool) {
	return "addr " + a.String(), f.addrs[a]
}

type fixedNamer struct{ fixed }

func (f fixedNamer) AllowPrivateName(h string, _ int) (string, bool) { return "name " + h, f.names[h] }

// TestBothAllowsOnlyWhatBothAllow: Both lets through a host, a private
// address and a private name only where each policy does, with the first
// one's rule.
func TestBothAllowsOnlyWhatBothAllow(t *testing.T) {
	ip := netip.MustParseAddr("10.0.0.1")
	a := fixedNamer{fixed{hosts: map[string]bool{"a.test": true, "b.test": true}, names: map[string]bool{"m.test": true, "n.test": true}, addrs: map[netip.Addr]bool{ip: true}}}
	b := fixedNamer{fixed{hosts: map[string]bool{"a.test": true}, names: map[string]bool{"m.test": true}}}
	p := Both(a, b)
	if r, ok := p.AllowHost("a.test", 443); !ok || r != "host a.test" {
		t.Errorf("a.test: %q %v, want allowed by the first's rule", r, ok)
	}
	if _, ok := p.AllowHost("b.test", 443); ok {
		t.Error("b.test, which the second policy refuses, was allowed")
	}
	if _, ok := p.AllowPrivate(ip, 443); ok {
		t.Error("10.0.0.1, which the second policy refuses, was allowed")
	}
	pn := p.(PrivateNamer)
	if _, ok := pn.AllowPrivateName("m.test", 443); !ok {
		t.Error("m.test, a private name of both, was refused")
	}
	if _, ok := pn.AllowPrivateName("n.test", 443); ok {
		t.Error("n.test, a private name of the first alone, was allowed")
	}
	if _, ok := Both(a, b.fixed).(PrivateNamer).AllowPrivateName("m.test", 443); ok {
		t.Error("a private name was allowed by a pair whose second policy names none")
	}
}
