package grant

import (
	"fmt"
	"net/netip"

	"github.com/airlockhq/airlock/internal/hostrule"
)

// DefaultPorts returns the ports a host pattern without a port allows.
func DefaultPorts() []int { return hostrule.DefaultPorts() }

// hostPattern is one normalised entry of network.hosts, network.private,
// network.plain_http or a secret's hosts. Parsing, normal form and matching
// are hostrule's, shared with the egress proxy and http_fetch.
type hostPattern = hostrule.Pattern

// splitHostPort splits "host", "host:port", "[v6]" or "[v6]:port".
func splitHostPort(s string) (string, int, error) { return hostrule.SplitHostPort(s) }

// normaliseHost returns the normalised name or the address of a host.
func normaliseHost(h string) (string, netip.Addr, error) { return hostrule.Normalise(h) }

// parseHostPattern parses an entry of network.plain_http or a secret's
// hosts: "name", "*.suffix" or an IP literal, each with an optional ":port".
func parseHostPattern(s string) (hostPattern, error) { return hostrule.Parse(s) }

// parsePublicHost parses an entry of network.hosts: like parseHostPattern,
// but names and addresses that are never public are refused.
func parsePublicHost(s string) (hostPattern, error) {
	p, err := parseHostPattern(s)
	if err != nil {
		return p, err
	}
	if ip := p.Addr(); ip.IsValid() {
		if !hostrule.IsPublic(ip) {
			return hostPattern{}, &notPublicError{fmt.Sprintf("%q is not a public address; list it under network.private", s)}
		}
	}
	if hostrule.IsLoopbackName(p.Name()) {
		return hostPattern{}, &notPublicError{fmt.Sprintf("%q is a loopback name; list it under network.private", s)}
	}
	return p, nil
}

// notPublicError refuses a network.hosts entry that network.private must
// list instead. From the command line (--allow-host) the refusal says where
// that list is: only a grant file has one (notPublicFlagHint).
type notPublicError struct{ msg string }

func (e *notPublicError) Error() string { return e.msg }

// notPublicFlagHint ends a notPublicError for an entry given as a flag.
const notPublicFlagHint = " in a grant file, given with --grant (--allow-host reaches public hosts only)"

// parsePrivate parses an entry of network.private: an IP address, a CIDR, or
// a host pattern whose names may resolve to non-public addresses.
func parsePrivate(s string) (hostPattern, error) { return hostrule.ParsePrivate(s) }
