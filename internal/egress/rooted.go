package egress

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"strings"
)

// rootedResolver looks every name up as a fully qualified one (with the
// root's trailing dot), so the resolver never tries the host's resolv.conf
// search list: "x.a.test" is x.a.test, never x.a.test.corp.internal (tried
// when the name itself does not resolve, or first of all under ndots:5, as
// in every Kubernetes pod). The name the grant was asked about is the name
// whose addresses are checked and dialled, and the one the Decision names.
//
// It uses Go's own resolver (PreferGo), which finds a rooted name of two
// labels or more in /etc/hosts as it finds the same name without the dot;
// the C library's does not, so a host's /etc/hosts entries would stop
// working where Go would otherwise call it (an nsswitch.conf with mdns or
// myhostname). A name of one label ("localhost", a compose service's "db")
// Go keys in /etc/hosts without the dot and would not find rooted, so it is
// looked up as it is by a resolver that has no DNS to ask: /etc/hosts
// answers it or nothing does, and the search list is never tried.
type rootedResolver struct{ r, files *net.Resolver }

// errNoDNS is the dial error of the resolver of one-label names.
var errNoDNS = errors.New("a name of one label is looked up in /etc/hosts only")

func newRootedResolver() rootedResolver {
	return rootedResolver{
		r: &net.Resolver{PreferGo: true},
		files: &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
			return nil, errNoDNS
		}},
	}
}

func (r rootedResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if name := strings.TrimSuffix(host, "."); name != "" && !strings.Contains(name, ".") {
		return r.files.LookupNetIP(ctx, network, name)
	}
	if !strings.HasSuffix(host, ".") {
		host += "."
	}
	return r.r.LookupNetIP(ctx, network, host)
}
