package hostrule

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// MaxNameLen is the longest host name in presentation form, without the
// root dot.
const MaxNameLen = 253

// Normalise returns the canonical form of a host as written in a URL, a
// grant or a proxy request (without brackets or port): an IP address, or
// else a normalised name (see the package comment). Exactly one of name and
// ip is set when err is nil. An IPv6 address with a zone is refused.
func Normalise(h string) (name string, ip netip.Addr, err error) {
	if h == "" {
		return "", netip.Addr{}, errors.New("empty host")
	}
	if len(h) > 4*MaxNameLen {
		return "", netip.Addr{}, fmt.Errorf("host of %d bytes is longer than %d bytes", len(h), MaxNameLen)
	}
	if ip, err := netip.ParseAddr(h); err == nil {
		if ip.Zone() != "" {
			return "", netip.Addr{}, fmt.Errorf("%q: an address with a zone is refused", h)
		}
		return "", ip.Unmap(), nil
	}
	if strings.Contains(h, ":") {
		return "", netip.Addr{}, fmt.Errorf("%q is not a valid IPv6 address", h)
	}
	trimmed := strings.TrimSuffix(h, ".")
	if trimmed == "" || strings.HasSuffix(trimmed, ".") {
		return "", netip.Addr{}, fmt.Errorf("%q has an empty label", h)
	}
	if !utf8.ValidString(trimmed) {
		return "", netip.Addr{}, fmt.Errorf("%q is not valid UTF-8", h)
	}
	ascii, err := idna.Lookup.ToASCII(trimmed)
	if err != nil {
		return "", netip.Addr{}, fmt.Errorf("%q is not a valid host name: %w", h, err)
	}
	ascii = strings.ToLower(ascii)
	// The normal form must read back as itself, so no name has two.
	if again, err := idna.Lookup.ToASCII(ascii); err != nil || again != ascii {
		return "", netip.Addr{}, fmt.Errorf("%q is not a valid host name: its ASCII form %q does not read back", h, ascii)
	}
	if len(ascii) > MaxNameLen {
		return "", netip.Addr{}, fmt.Errorf("%q is longer than %d bytes", h, MaxNameLen)
	}
	labels := strings.Split(ascii, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return "", netip.Addr{}, fmt.Errorf("%q has an empty or over-long label", h)
		}
		for i := 0; i < len(l); i++ {
			if c := l[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return "", netip.Addr{}, fmt.Errorf("%q is not a valid host name: character %q", h, c)
			}
		}
	}
	if numericLabel(labels[len(labels)-1]) {
		return "", netip.Addr{}, fmt.Errorf("%q reads as a numeric IP address; write the address in canonical form", h)
	}
	return ascii, netip.Addr{}, nil
}

// numericLabel reports whether inet_aton or a URL parser would read a last
// label as part of an IPv4 address: all decimal digits, or "0x" and hex
// digits (none included). Every form inet_aton accepts ends in such a label.
func numericLabel(l string) bool {
	digits := "0123456789"
	if strings.HasPrefix(l, "0x") {
		l, digits = l[2:], "0123456789abcdef"
	}
	for i := 0; i < len(l); i++ {
		if !strings.ContainsRune(digits, rune(l[i])) {
			return false
		}
	}
	return true
}

// IsLoopbackName reports whether a normalised name is "localhost" or under
// it, names resolvers answer with a loopback address (RFC 6761).
func IsLoopbackName(name string) bool {
	return name == "localhost" || strings.HasSuffix(name, ".localhost")
}

// SplitHostPort splits "host", "host:port", "[v6]" or "[v6]:port". A bare
// IPv6 address without brackets is returned whole, with port 0 (none).
func SplitHostPort(s string) (host string, port int, err error) {
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
		port, err := ParsePort(rest[1:])
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
		port, err := ParsePort(s[i+1:])
		if err != nil {
			return "", 0, fmt.Errorf("%q: %w", s, err)
		}
		return s[:i], port, nil
	default:
		return s, 0, nil
	}
}

// ParsePort parses a decimal port in 1..65535 with no sign, space or leading
// zero.
func ParsePort(s string) (int, error) {
	if s == "" || len(s) > 5 || s[0] < '1' || s[0] > '9' {
		return 0, fmt.Errorf("port %q is not in 1..65535", s)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("port %q is not in 1..65535", s)
		}
	}
	n, _ := strconv.Atoi(s)
	if n > 65535 {
		return 0, fmt.Errorf("port %q is not in 1..65535", s)
	}
	return n, nil
}
