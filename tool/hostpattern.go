package tool

import (
	"net/netip"
	"strconv"
	"strings"
)

// hostMatches reports whether host:port matches one grant host pattern in
// normal form, as wire.Egress carries them: "name" (that name only),
// "*.suffix" (one or more labels in front of suffix), an IP literal
// ("192.0.2.1", "[2001:db8::1]"), each with an optional ":port"; no port
// means 80 and 443. host must already be normalised (see normHost).
func hostMatches(pattern, host string, port int) bool {
	h, p := pattern, 0
	switch {
	case strings.HasPrefix(h, "["):
		end := strings.IndexByte(h, ']')
		if end < 0 {
			return false
		}
		if rest := h[end+1:]; rest != "" {
			n, err := strconv.Atoi(strings.TrimPrefix(rest, ":"))
			if err != nil || !strings.HasPrefix(rest, ":") {
				return false
			}
			p = n
		}
		h = h[1:end]
	case strings.Count(h, ":") == 1:
		i := strings.IndexByte(h, ':')
		n, err := strconv.Atoi(h[i+1:])
		if err != nil {
			return false
		}
		h, p = h[:i], n
	}
	if p != 0 && p != port || p == 0 && port != 80 && port != 443 {
		return false
	}
	if ip, err := netip.ParseAddr(h); err == nil {
		return ip.Unmap().String() == host
	}
	if suffix, ok := strings.CutPrefix(h, "*."); ok {
		return len(host) > len(suffix)+1 && strings.HasSuffix(host, "."+suffix)
	}
	return h == host
}

// anyHostMatches reports whether any pattern matches host:port.
func anyHostMatches(patterns []string, host string, port int) bool {
	for _, p := range patterns {
		if hostMatches(p, host, port) {
			return true
		}
	}
	return false
}

// normHost returns a URL host in the form patterns are compared with: lower
// case without a trailing dot, or an IP address's canonical text. ok is false
// for a host that is empty, not ASCII, or carries a zone.
func normHost(h string) (string, bool) {
	if ip, err := netip.ParseAddr(h); err == nil {
		if ip.Zone() != "" {
			return "", false
		}
		return ip.Unmap().String(), true
	}
	h = strings.ToLower(strings.TrimSuffix(h, "."))
	if h == "" {
		return "", false
	}
	for _, c := range []byte(h) {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_') {
			return "", false
		}
	}
	return h, true
}
