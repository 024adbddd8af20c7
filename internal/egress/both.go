package egress

import "net/netip"

// Both returns a Policy that allows a destination only where a and b both
// allow it: the egress of remote hands, whose own grant is narrowed by the
// grant of the broker whose call it is. Its rules are a's. A name whose
// addresses may be private (PrivateNamer) must be listed so by both.
func Both(a, b Policy) Policy { return both{a, b} }

type both struct{ a, b Policy }

func (p both) AllowHost(host string, port int) (string, bool) {
	rule, ok := p.a.AllowHost(host, port)
	if !ok {
		return "", false
	}
	if _, ok := p.b.AllowHost(host, port); !ok {
		return "", false
	}
	return rule, true
}

func (p both) AllowPrivate(addr netip.Addr, port int) (string, bool) {
	rule, ok := p.a.AllowPrivate(addr, port)
	if !ok {
		return "", false
	}
	if _, ok := p.b.AllowPrivate(addr, port); !ok {
		return "", false
	}
	return rule, true
}

func (p both) AllowPrivateName(host string, port int) (string, bool) {
	an, ok := p.a.(PrivateNamer)
	if !ok {
		return "", false
	}
	bn, ok := p.b.(PrivateNamer)
	if !ok {
		return "", false
	}
	rule, ok := an.AllowPrivateName(host, port)
	if !ok {
		return "", false
	}
	if _, ok := bn.AllowPrivateName(host, port); !ok {
		return "", false
	}
	return rule, true
}
