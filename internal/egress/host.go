package egress

import (
	"errors"
	"fmt"
	"net/netip"

	"github.com/airlockhq/airlock/internal/hostrule"
)

// ErrBadHost is wrapped by the errors NormalizeHost and the request parsers
// return for a name or port that is malformed (as opposed to not granted).
var ErrBadHost = errors.New("malformed host")

// Classify reports whether addr is a public unicast address that the proxy
// may dial without an explicit allowance, and if not, why. It is
// [hostrule.Classify], the rule the grant checks network.hosts by too.
func Classify(addr netip.Addr) (public bool, reason string) { return hostrule.Classify(addr) }

// NormalizeHost returns the canonical form of a host name as the policy sees
// it ([hostrule.Normalise]: IDNA ASCII, lower case, no trailing dot). An IP
// address, or a name that reads as a numeric IPv4 address, is refused.
func NormalizeHost(h string) (string, error) {
	name, ip, err := hostrule.Normalise(h)
	switch {
	case err != nil:
		return "", fmt.Errorf("%w: %w", ErrBadHost, err)
	case ip.IsValid():
		return "", fmt.Errorf("%q is an address, not a name: %w", h, ErrBadHost)
	}
	return name, nil
}

// parsePort parses a decimal port 1..65535 with no sign, spaces or leading zeros.
func parsePort(s string) (int, error) {
	n, err := hostrule.ParsePort(s)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrBadHost, err)
	}
	return n, nil
}

// target is a parsed destination: either a normalised name or an IP literal.
type target struct {
	host string     // normalised name, or ip.String() for a literal
	ip   netip.Addr // valid when the destination is an IP literal
	port int
}

// parseTarget reads a host as a client sent it (without brackets) and a port,
// by the grant's rules ([hostrule.Normalise]): an IP address in canonical
// form is a literal (IPv4-mapped unmapped); a name that inet_aton would read
// as an IPv4 address ("2130706433", "0x7f.1", "127.1") is refused, as is an
// IPv6 literal with a zone and anything else malformed.
func parseTarget(host string, port int) (target, error) {
	if port < 1 || port > 65535 {
		return target{}, fmt.Errorf("port %d: %w", port, ErrBadHost)
	}
	name, ip, err := hostrule.Normalise(host)
	if err != nil {
		return target{}, fmt.Errorf("%w: %w", ErrBadHost, err)
	}
	if ip.IsValid() {
		return target{host: ip.String(), ip: ip, port: port}, nil
	}
	return target{host: name, port: port}, nil
}
