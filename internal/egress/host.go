package egress

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"golang.org/x/net/idna"
)

// ErrBadHost is wrapped by the errors NormalizeHost and the request parsers
// return for a name or port that is malformed (as opposed to not granted).
var ErrBadHost = errors.New("malformed host")

// maxHostLen is the longest DNS name in presentation form, without the root dot.
const maxHostLen = 253

// NormalizeHost returns the canonical form of a host name as the policy sees
// it: IDNA (UTS #46 lookup profile) mapped to ASCII, lowercase, with one
// trailing dot removed. It rejects empty names, names longer than 253 bytes,
// empty or over-long labels, characters outside letters, digits and hyphen,
// and a last label made only of digits (which no resolver treats as a name).
//
// It does not decide whether h is an IP address; see target for that.
func NormalizeHost(h string) (string, error) {
	if h == "" {
		return "", fmt.Errorf("empty host: %w", ErrBadHost)
	}
	if len(h) > 4*maxHostLen {
		return "", fmt.Errorf("host of %d bytes: %w", len(h), ErrBadHost)
	}
	a, err := idna.Lookup.ToASCII(h)
	if err != nil {
		return "", fmt.Errorf("host %q: %w: %w", h, err, ErrBadHost)
	}
	a = strings.ToLower(strings.TrimSuffix(a, "."))
	if a == "" || len(a) > maxHostLen {
		return "", fmt.Errorf("host %q: bad length: %w", h, ErrBadHost)
	}
	labels := strings.Split(a, ".")
	for _, l := range labels {
		if l == "" || len(l) > 63 {
			return "", fmt.Errorf("host %q: bad label length: %w", h, ErrBadHost)
		}
		for i := 0; i < len(l); i++ {
			c := l[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return "", fmt.Errorf("host %q: character %q: %w", h, c, ErrBadHost)
			}
		}
	}
	return a, nil
}

// parseInetAton parses s the way inet_aton(3) and getaddrinfo do for IPv4:
// one to four parts separated by dots, each decimal, octal (leading 0) or
// hexadecimal (leading 0x), the last part filling the remaining bytes. So
// "2130706433", "0x7f000001", "0177.0.0.1", "127.1" and "0" are all IPv4.
func parseInetAton(s string) (netip.Addr, bool) {
	if s == "" {
		return netip.Addr{}, false
	}
	parts := strings.Split(s, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	vals := make([]uint64, len(parts))
	for i, p := range parts {
		v, ok := parseAtonPart(p)
		if !ok {
			return netip.Addr{}, false
		}
		vals[i] = v
	}
	var out uint64
	last := len(vals) - 1
	for i := 0; i < last; i++ {
		if vals[i] > 0xff {
			return netip.Addr{}, false
		}
		out |= vals[i] << (8 * (3 - i))
	}
	if vals[last] >= 1<<(8*(4-last)) {
		return netip.Addr{}, false
	}
	out |= vals[last]
	return netip.AddrFrom4([4]byte{byte(out >> 24), byte(out >> 16), byte(out >> 8), byte(out)}), true
}

func parseAtonPart(p string) (uint64, bool) {
	base := 10
	switch {
	case p == "":
		return 0, false
	case len(p) > 1 && (p[:2] == "0x" || p[:2] == "0X"):
		base, p = 16, p[2:]
		if p == "" {
			// glibc reads "0x" as zero.
			return 0, true
		}
	case len(p) > 1 && p[0] == '0':
		base, p = 8, p[1:]
	}
	if len(p) > 32 {
		return 0, false
	}
	v, err := strconv.ParseUint(p, base, 64)
	if err != nil || v > 0xffffffff {
		return 0, false
	}
	return v, true
}

// parsePort parses a decimal port 1..65535 with no sign, spaces or leading zeros.
func parsePort(s string) (int, error) {
	if s == "" || len(s) > 5 || s[0] == '0' {
		return 0, fmt.Errorf("port %q: %w", s, ErrBadHost)
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("port %q: %w", s, ErrBadHost)
		}
	}
	n, _ := strconv.Atoi(s)
	if n < 1 || n > 65535 {
		return 0, fmt.Errorf("port %q out of range: %w", s, ErrBadHost)
	}
	return n, nil
}

// target is a parsed destination: either a normalised name or an IP literal.
type target struct {
	host string     // normalised name, or ip.String() for a literal
	ip   netip.Addr // valid when the destination is an IP literal
	port int
}

// parseTarget reads a host as a client sent it (without brackets) and a port.
// Anything that inet_aton or netip reads as an address is an IP literal; an
// IPv6 literal with a zone is refused here, as is anything else malformed.
func parseTarget(host string, port int) (target, error) {
	if port < 1 || port > 65535 {
		return target{}, fmt.Errorf("port %d: %w", port, ErrBadHost)
	}
	if strings.Contains(host, ":") {
		ip, err := netip.ParseAddr(host)
		if err != nil {
			return target{}, fmt.Errorf("IPv6 literal %q: %w", host, ErrBadHost)
		}
		if ip.Zone() != "" {
			return target{}, fmt.Errorf("IPv6 literal %q has a zone: %w", host, ErrBadHost)
		}
		ip = ip.Unmap()
		return target{host: ip.String(), ip: ip, port: port}, nil
	}
	name, err := NormalizeHost(host)
	if err != nil {
		// Fall back to inet_aton on the raw text, so that e.g. "0x7F.1"
		// is still recognised as an address rather than just "bad".
		if ip, ok := parseInetAton(strings.TrimSuffix(host, ".")); ok {
			return target{host: ip.String(), ip: ip, port: port}, nil
		}
		return target{}, err
	}
	if ip, ok := parseInetAton(name); ok {
		return target{host: ip.String(), ip: ip, port: port}, nil
	}
	if last := name[strings.LastIndexByte(name, '.')+1:]; allDigits(last) {
		return target{}, fmt.Errorf("host %q: numeric top-level label: %w", host, ErrBadHost)
	}
	return target{host: name, port: port}, nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
