package hostrule

import (
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"golang.org/x/net/publicsuffix"
)

// DefaultPorts returns the ports a host pattern without a port allows.
func DefaultPorts() []int { return []int{80, 443} }

// Pattern is one normalised grant host pattern: a name ("api.example.com"),
// a wildcard ("*.example.com": one or more labels in front of the suffix),
// an IP address or, from ParsePrivate only, a CIDR; each with an optional
// port, none meaning DefaultPorts.
type Pattern struct {
	name   string       // ASCII, lower case, no trailing dot; for a wildcard, the suffix
	wild   bool         // "*.name"
	ip     netip.Addr   // an IP literal (unmapped)
	prefix netip.Prefix // a CIDR
	port   int          // 0 means DefaultPorts
}

// Parse parses "name", "*.suffix" or an IP literal ("192.0.2.1", "[2001:db8::1]"
// or bare "2001:db8::1"), each with an optional ":port" (an IPv6 literal with a
// port needs brackets). A wildcard must be the whole first label and have a
// suffix of at least two labels that is not a public suffix.
func Parse(s string) (Pattern, error) {
	if err := notURL(s); err != nil {
		return Pattern{}, err
	}
	host, port, err := SplitHostPort(s)
	if err != nil {
		return Pattern{}, err
	}
	p := Pattern{port: port}
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		p.wild = true
		host = rest
	}
	if strings.Contains(host, "*") {
		return Pattern{}, fmt.Errorf("%q: a wildcard is allowed only as a whole first label, as in \"*.example.com\"", s)
	}
	name, ip, err := Normalise(host)
	if err != nil {
		return Pattern{}, err
	}
	switch {
	case ip.IsValid() && p.wild:
		return Pattern{}, fmt.Errorf("%q: an address cannot have a wildcard", s)
	case ip.IsValid():
		p.ip = ip
	case p.wild && !strings.Contains(name, "."):
		return Pattern{}, fmt.Errorf("%q: a wildcard needs a suffix of at least two labels", s)
	case p.wild && isPublicSuffix(name):
		return Pattern{}, fmt.Errorf("%q: %s is a public suffix (anyone can have a name under it, as under .com: the Public Suffix List), so the wildcard would reach sites of anyone's choosing; list the hosts by name", s, name)
	default:
		p.name = name
	}
	return p, nil
}

// notURL refuses a pattern written as a URL ("https://example.com/x"),
// naming the host to write instead: read as a host it would be refused
// for a port of "//example.com" or as a malformed IPv6 address.
func notURL(s string) error {
	_, rest, ok := strings.Cut(s, "://")
	if !ok {
		return nil
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	if i := strings.LastIndexByte(rest, '@'); i >= 0 {
		rest = rest[i+1:] // never echo a URL's user information
	}
	if rest == "" {
		return fmt.Errorf("%q is a URL; write the host alone, as in \"example.com\" (or \"example.com:8443\")", s)
	}
	return fmt.Errorf("%q is a URL; write the host alone: %q", s, rest)
}

// isPublicSuffix reports whether the normalised name is itself a public
// suffix, one under which different parties have names (co.uk, github.io,
// workers.dev, googleapis.com), by the Public Suffix List's ICANN and
// private sections. A wildcard over one matches as much as "*.com", which
// no grant takes: every site a registrant sets up, an attacker's among
// them. Names under .arpa (home.arpa, the local network's) are no one's to
// register, and are left out.
func isPublicSuffix(name string) bool {
	if strings.HasSuffix(name, ".arpa") {
		return false
	}
	ps, _ := publicsuffix.PublicSuffix(name)
	return ps == name
}

// ParsePrivate parses a pattern that may also be a CIDR ("10.0.0.0/8",
// "fd00::/8"); an IPv4-mapped CIDR is rewritten as the IPv4 CIDR it covers.
func ParsePrivate(s string) (Pattern, error) {
	if err := notURL(s); err != nil {
		return Pattern{}, err
	}
	if !strings.Contains(s, "/") {
		return Parse(s)
	}
	pfx, err := netip.ParsePrefix(s)
	if err != nil || pfx.Addr().Zone() != "" {
		return Pattern{}, fmt.Errorf("%q is not a CIDR", s)
	}
	if pfx.Addr().Is4In6() {
		if pfx.Bits() < 96 {
			return Pattern{}, fmt.Errorf("%q mixes IPv4-mapped and other IPv6 addresses; write the IPv4 CIDR", s)
		}
		pfx = netip.PrefixFrom(pfx.Addr().Unmap(), pfx.Bits()-96)
	}
	return Pattern{prefix: pfx.Masked()}, nil
}

// Name returns the pattern's name (for a wildcard, its suffix), or "".
func (p Pattern) Name() string { return p.name }

// Wild reports whether the pattern is "*.suffix".
func (p Pattern) Wild() bool { return p.wild }

// Addr returns the pattern's IP literal, or the zero Addr.
func (p Pattern) Addr() netip.Addr { return p.ip }

// Prefix returns the pattern's CIDR, or the zero Prefix.
func (p Pattern) Prefix() netip.Prefix { return p.prefix }

// Port returns the pattern's port, or 0 for DefaultPorts.
func (p Pattern) Port() int { return p.port }

// String renders the pattern in normal form, which Parse (or ParsePrivate
// for a CIDR) reads back as the same pattern.
func (p Pattern) String() string {
	var h string
	switch {
	case p.prefix.IsValid():
		return p.prefix.String()
	case p.ip.IsValid():
		h = p.ip.String()
		if p.ip.Is6() {
			h = "[" + h + "]"
		}
	case p.wild:
		h = "*." + p.name
	default:
		h = p.name
	}
	if p.port != 0 {
		h += ":" + strconv.Itoa(p.port)
	}
	return h
}

// PortOK reports whether port is allowed by the pattern.
func (p Pattern) PortOK(port int) bool {
	if p.port != 0 {
		return port == p.port
	}
	return port == 80 || port == 443
}

// MatchName reports whether a normalised name matches the pattern label by
// label: an exact name only itself, "*.suffix" any name with one or more
// labels in front of suffix (not suffix itself, not "evilsuffix").
func (p Pattern) MatchName(name string) bool {
	if p.name == "" {
		return false
	}
	if !p.wild {
		return name == p.name
	}
	return len(name) > len(p.name)+1 && strings.HasSuffix(name, p.name) && name[len(name)-len(p.name)-1] == '.'
}

// MatchAddr reports whether an unmapped address is the pattern's IP literal
// or inside its CIDR.
func (p Pattern) MatchAddr(ip netip.Addr) bool {
	return ip.IsValid() && (p.ip == ip || p.prefix.IsValid() && p.prefix.Contains(ip))
}

// Match reports whether a normalised host (a name, or an unmapped address
// when ip is valid, as Normalise returns them) and port match the pattern.
func (p Pattern) Match(name string, ip netip.Addr, port int) bool {
	if !p.PortOK(port) {
		return false
	}
	if ip.IsValid() {
		return p.MatchAddr(ip)
	}
	return p.MatchName(name)
}

// MatchHost normalises host (as Normalise) and reports whether it and port
// match the pattern; a host that does not normalise matches nothing.
func (p Pattern) MatchHost(host string, port int) bool {
	name, ip, err := Normalise(host)
	return err == nil && p.Match(name, ip, port)
}

// Covers reports whether every host and port q allows, p allows too.
func (p Pattern) Covers(q Pattern) bool {
	switch {
	case q.port == 0 && p.port != 0:
		return false
	case q.port != 0 && !p.PortOK(q.port):
		return false
	}
	switch {
	case q.ip.IsValid():
		return p.MatchAddr(q.ip)
	case q.prefix.IsValid():
		return p.prefix.IsValid() && p.prefix.Bits() <= q.prefix.Bits() && p.prefix.Contains(q.prefix.Addr())
	case q.wild:
		return p.wild && (p.name == q.name || p.MatchName(q.name))
	default:
		return p.MatchName(q.name)
	}
}
