package grant

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"golang.org/x/net/idna"
)

// DefaultPorts returns the ports a host pattern without a port allows.
func DefaultPorts() []int { return []int{80, 443} }

// hostPattern is one normalised entry of network.hosts, network.private,
// network.plain_http or a secret's hosts.
type hostPattern struct {
	name   string       // ASCII, lower case, no trailing dot; for a wildcard, the suffix
	wild   bool         // "*.name": one or more labels below name
	ip     netip.Addr   // an IP literal (unmapped)
	prefix netip.Prefix // a CIDR (network.private only)
	port   int          // 0 means DefaultPorts
}

// String renders the pattern in normal form.
func (p hostPattern) String() string {
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

// portOK reports whether port is allowed by the pattern.
func (p hostPattern) portOK(port int) bool {
	if p.port != 0 {
		return port == p.port
	}
	return port == 80 || port == 443
}

// matchName reports whether the normalised name host matches the pattern
// label by label: an exact name only itself, "*.suffix" any name with one or
// more labels in front of suffix (not suffix itself, not "evilsuffix").
func (p hostPattern) matchName(host string) bool {
	if p.name == "" {
		return false
	}
	if !p.wild {
		return host == p.name
	}
	return len(host) > len(p.name)+1 && strings.HasSuffix(host, p.name) && host[len(host)-len(p.name)-1] == '.'
}

// covers reports whether every host and port q allows, p allows too.
func (p hostPattern) covers(q hostPattern) bool {
	switch {
	case q.port == 0 && p.port != 0:
		return false
	case q.port != 0 && !p.portOK(q.port):
		return false
	}
	switch {
	case q.ip.IsValid():
		return p.ip == q.ip || p.prefix.IsValid() && p.prefix.Contains(q.ip)
	case q.prefix.IsValid():
		return p.prefix.IsValid() && p.prefix.Bits() <= q.prefix.Bits() && p.prefix.Contains(q.prefix.Addr())
	case q.wild:
		return p.wild && (p.name == q.name || p.matchName(q.name))
	default:
		return p.matchName(q.name)
	}
}

// splitHostPort splits "host", "host:port", "[v6]" or "[v6]:port". A bare
// IPv6 address without brackets is returned whole, with no port.
func splitHostPort(s string) (host string, port int, err error) {
	if strings.HasPrefix(s, "[") {
		end := strings.IndexByte(s, ']')
		if end < 0 {
			return "", 0, fmt.Errorf("%q has no closing ]", s)
		}
		host, rest := s[1:end], s[end+1:]
		if rest == "" {
			return host, 0, nil
		}
		if !strings.HasPrefix(rest, ":") {
			return "", 0, fmt.Errorf("%q has text after ]", s)
		}
		port, err := parsePort(rest[1:])
		if err != nil {
			return "", 0, fmt.Errorf("%q: %w", s, err)
		}
		return host, port, nil
	}
	switch strings.Count(s, ":") {
	case 0:
		return s, 0, nil
	case 1:
		i := strings.IndexByte(s, ':')
		port, err := parsePort(s[i+1:])
		if err != nil {
			return "", 0, fmt.Errorf("%q: %w", s, err)
		}
		return s[:i], port, nil
	default:
		return s, 0, nil
	}
}

// parsePort parses a decimal port in 1..65535 with no sign or leading zero.
func parsePort(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || s == "" || s[0] < '1' || s[0] > '9' || n < 1 || n > 65535 {
		return 0, fmt.Errorf("port %q is not in 1..65535", s)
	}
	return n, nil
}

// normaliseHost returns the ASCII, lower-case form of a host name without
// its trailing dot, or its IP address. It refuses names a URL parser would
// read as a numeric IPv4 address ("2130706433", "127.1", "0x7f000001"), so a
// name and an address can never be confused.
func normaliseHost(h string) (string, netip.Addr, error) {
	if h == "" {
		return "", netip.Addr{}, errors.New("empty host")
	}
	if ip, err := netip.ParseAddr(h); err == nil {
		if ip.Zone() != "" {
			return "", netip.Addr{}, fmt.Errorf("%q: an address with a zone cannot be granted", h)
		}
		return "", ip.Unmap(), nil
	}
	name := strings.TrimSuffix(h, ".")
	if name == "" || strings.HasSuffix(name, ".") {
		return "", netip.Addr{}, fmt.Errorf("%q has an empty label", h)
	}
	ascii, err := idna.Lookup.ToASCII(name)
	if err != nil {
		return "", netip.Addr{}, fmt.Errorf("%q is not a valid host name: %w", h, err)
	}
	ascii = strings.ToLower(ascii)
	if len(ascii) > 253 {
		return "", netip.Addr{}, fmt.Errorf("%q is longer than 253 bytes", h)
	}
	labels := strings.Split(ascii, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return "", netip.Addr{}, fmt.Errorf("%q has an empty or over-long label", h)
		}
		for _, c := range []byte(l) {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return "", netip.Addr{}, fmt.Errorf("%q is not a valid host name", h)
			}
		}
	}
	if numericLabel(labels[len(labels)-1]) {
		return "", netip.Addr{}, fmt.Errorf("%q reads as a numeric IP address; write the address in canonical form", h)
	}
	return ascii, netip.Addr{}, nil
}

// numericLabel reports whether a URL parser would read the last label of a
// host as part of an IPv4 address: all decimal digits, or 0x and hex digits.
func numericLabel(l string) bool {
	digits := "0123456789"
	if strings.HasPrefix(l, "0x") {
		l, digits = l[2:], "0123456789abcdef"
		if l == "" {
			return true
		}
	}
	for _, c := range l {
		if !strings.ContainsRune(digits, c) {
			return false
		}
	}
	return true
}

// parseHostPattern parses an entry of network.hosts, network.plain_http or a
// secret's hosts: "name", "*.suffix" or an IP literal, each with an optional
// ":port".
func parseHostPattern(s string) (hostPattern, error) {
	host, port, err := splitHostPort(s)
	if err != nil {
		return hostPattern{}, err
	}
	p := hostPattern{port: port}
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		p.wild = true
		host = rest
	}
	if strings.Contains(host, "*") {
		return hostPattern{}, fmt.Errorf("%q: a wildcard is allowed only as a whole first label, as in \"*.example.com\"", s)
	}
	name, ip, err := normaliseHost(host)
	if err != nil {
		return hostPattern{}, err
	}
	switch {
	case ip.IsValid() && p.wild:
		return hostPattern{}, fmt.Errorf("%q: an address cannot have a wildcard", s)
	case ip.IsValid():
		p.ip = ip
	case p.wild && !strings.Contains(name, "."):
		return hostPattern{}, fmt.Errorf("%q: a wildcard needs a suffix of at least two labels", s)
	default:
		p.name = name
	}
	return p, nil
}

// parsePublicHost parses an entry of network.hosts: like parseHostPattern,
// but names and addresses that are never public are refused.
func parsePublicHost(s string) (hostPattern, error) {
	p, err := parseHostPattern(s)
	if err != nil {
		return p, err
	}
	if p.ip.IsValid() && !isPublic(p.ip) {
		return hostPattern{}, fmt.Errorf("%q is not a public address; list it under network.private", s)
	}
	if p.name == "localhost" || strings.HasSuffix(p.name, ".localhost") {
		return hostPattern{}, fmt.Errorf("%q is a loopback name; list it under network.private", s)
	}
	return p, nil
}

// parsePrivate parses an entry of network.private: an IP address, a CIDR, or
// a host pattern whose names may resolve to non-public addresses.
func parsePrivate(s string) (hostPattern, error) {
	if strings.Contains(s, "/") {
		pfx, err := netip.ParsePrefix(s)
		if err != nil || pfx.Addr().Zone() != "" {
			return hostPattern{}, fmt.Errorf("%q is not a CIDR", s)
		}
		if pfx.Addr().Is4In6() {
			if pfx.Bits() < 96 {
				return hostPattern{}, fmt.Errorf("%q mixes IPv4-mapped and other IPv6 addresses; write the IPv4 CIDR", s)
			}
			pfx = netip.PrefixFrom(pfx.Addr().Unmap(), pfx.Bits()-96)
		}
		return hostPattern{prefix: pfx.Masked()}, nil
	}
	return parseHostPattern(s)
}

// isPublic reports whether addr is a global unicast address outside the
// special-purpose ranges. It is the grant's sanity check on literals written
// in network.hosts; the egress proxy applies its own, complete rule.
func isPublic(addr netip.Addr) bool {
	addr = addr.Unmap()
	if !addr.IsGlobalUnicast() || addr.IsPrivate() {
		return false
	}
	for _, p := range nonPublic {
		if p.Contains(addr) {
			return false
		}
	}
	return !addr.Is6() || netip.MustParsePrefix("2000::/3").Contains(addr)
}

var nonPublic = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "100.64.0.0/10", "192.0.0.0/24", "192.0.2.0/24", "192.88.99.0/24",
		"198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "240.0.0.0/4",
		"64:ff9b::/96", "64:ff9b:1::/48", "100::/64", "2001::/23", "2001:db8::/32", "2002::/16",
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()
