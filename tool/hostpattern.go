package tool

import (
	"fmt"

	"github.com/airlockhq/airlock/internal/hostrule"
)

// hostMatches reports whether host:port matches one grant host pattern in
// normal form, as wire.Egress carries them: "name" (that name only),
// "*.suffix" (one or more labels in front of suffix), an IP literal
// ("192.0.2.1", "[2001:db8::1]"), each with an optional ":port"; no port
// means 80 and 443. Parsing and matching are hostrule's, the grant's own
// rules; a pattern that does not parse matches nothing.
func hostMatches(pattern, host string, port int) bool {
	p, err := hostrule.Parse(pattern)
	return err == nil && p.MatchHost(host, port)
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

// normHost returns a URL host in the form patterns are compared with
// (hostrule.Normalise: lower case without a trailing dot, or an IP address's
// canonical text). It refuses a host that is not ASCII (http_fetch takes IDNs
// in their xn-- form only), carries a zone, or that the grant's rules refuse,
// such as a name that reads as a numeric IPv4 address.
func normHost(h string) (string, error) {
	for i := 0; i < len(h); i++ {
		if h[i] >= 0x80 {
			return "", fmt.Errorf("the host %q is not a plain ASCII host name or address (write IDNs in their xn-- form)", clip(h))
		}
	}
	name, ip, err := hostrule.Normalise(h)
	switch {
	case err != nil:
		return "", fmt.Errorf("the host is refused: %w", err)
	case ip.IsValid():
		return ip.String(), nil
	}
	return name, nil
}
