package grant

import (
	"fmt"
	"net/netip"
	"slices"
)

// HasNetwork reports whether the grant names any host or private address,
// so a sandbox of its calls needs the egress proxy.
func (g *Grant) HasNetwork() bool { return len(g.hosts)+len(g.private) > 0 }

// PlainHTTPHosts returns the network.plain_http patterns in normal form
// ("name", "*.suffix", an IP literal, each with an optional ":port"), for
// http_fetch, which checks them again on every redirect inside the sandbox.
func (g *Grant) PlainHTTPHosts() []string {
	out := make([]string, 0, len(g.plainHTTP))
	for _, p := range g.plainHTTP {
		out = append(out, p.String())
	}
	return slices.Clip(out)
}

// Hosts returns the network.hosts and network.private patterns in normal
// form, for telling the model what its calls may reach.
func (g *Grant) Hosts() []string {
	out := make([]string, 0, len(g.hosts)+len(g.private))
	for _, p := range g.hosts {
		out = append(out, p.String())
	}
	for _, p := range g.private {
		out = append(out, p.String())
	}
	return slices.Clip(out)
}

// NetworkHosts returns the network.hosts patterns alone, in normal form.
func (g *Grant) NetworkHosts() []string {
	out := make([]string, 0, len(g.hosts))
	for _, p := range g.hosts {
		out = append(out, p.String())
	}
	return slices.Clip(out)
}

// NetworkPrivate returns the network.private entries alone (IPs, CIDRs
// and names), in normal form.
func (g *Grant) NetworkPrivate() []string {
	out := make([]string, 0, len(g.private))
	for _, p := range g.private {
		out = append(out, p.String())
	}
	return slices.Clip(out)
}

// NetworkRules are network.hosts and network.private entries alone,
// checked as a grant checks them (AllowHost, AllowPrivate,
// AllowPrivateName): remote hands hold a broker's call to the network the
// broker's grant names with them.
type NetworkRules struct {
	hosts, private []hostPattern
}

// ParseNetworkRules parses entries as NetworkHosts and NetworkPrivate give
// them, validating each as a grant file's network.hosts and
// network.private.
func ParseNetworkRules(hosts, private []string) (*NetworkRules, error) {
	r := &NetworkRules{}
	for _, h := range hosts {
		p, err := parsePublicHost(h)
		if err != nil {
			return nil, fmt.Errorf("network.hosts %q: %w", h, err)
		}
		r.hosts = append(r.hosts, p)
	}
	for _, h := range private {
		p, err := parsePrivate(h)
		if err != nil {
			return nil, fmt.Errorf("network.private %q: %w", h, err)
		}
		r.private = append(r.private, p)
	}
	return r, nil
}

// AllowHost is Grant.AllowHost for these rules alone.
func (r *NetworkRules) AllowHost(host string, port int) (rule string, ok bool) {
	return (&Grant{hosts: r.hosts, private: r.private}).AllowHost(host, port)
}

// AllowPrivate is Grant.AllowPrivate for these rules alone.
func (r *NetworkRules) AllowPrivate(addr netip.Addr, port int) (rule string, ok bool) {
	return (&Grant{private: r.private}).AllowPrivate(addr, port)
}

// AllowPrivateName is Grant.AllowPrivateName for these rules alone.
func (r *NetworkRules) AllowPrivateName(host string, port int) (rule string, ok bool) {
	return (&Grant{private: r.private}).AllowPrivateName(host, port)
}

// CommonHostPatterns returns the host patterns (network.plain_http's form)
// that a and b both allow: of each pair, the one the other covers. A pair
// that overlaps without either covering the other (a wildcard with a
// port and a name under it without one) gives nothing, so the result
// never allows what one list does not. Entries that do not parse are
// dropped.
func CommonHostPatterns(a, b []string) []string {
	parse := func(list []string) []hostPattern {
		var out []hostPattern
		for _, s := range list {
			if p, err := parseHostPattern(s); err == nil {
				out = append(out, p)
			}
		}
		return out
	}
	var out []string
	add := func(p hostPattern) {
		if s := p.String(); !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	pb := parse(b)
	for _, p := range parse(a) {
		for _, q := range pb {
			switch {
			case q.Covers(p):
				add(p)
			case p.Covers(q):
				add(q)
			}
		}
	}
	return out
}
