package grant

import (
	"net"
	"strconv"
	"strings"
)

// Source names where the grant came from: the file name given to Load or
// Parse, or "flags".
func (g *Grant) Source() string { return g.source }

// AllowsHost reports whether the secret may be sent to hostport ("host" or
// "host:port"; no port means 443), matched like the grant's network.hosts.
func (r SecretRule) AllowsHost(hostport string) bool {
	host, port := hostport, 443
	if h, p, err := net.SplitHostPort(hostport); err == nil {
		n, err := strconv.Atoi(p)
		if err != nil {
			return false
		}
		host, port = h, n
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, s := range r.Hosts {
		p, err := parseHostPattern(s)
		if err != nil {
			continue
		}
		if p.matchName(host) && p.portOK(port) {
			return true
		}
	}
	return false
}
