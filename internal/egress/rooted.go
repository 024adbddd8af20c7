package egress

import (
	"context"
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
// It uses Go's own resolver (PreferGo), which finds a rooted name in
// /etc/hosts as it finds the same name without the dot; the C library's
// does not, so a host's /etc/hosts entries would stop working where Go
// would otherwise call it (an nsswitch.conf with mdns or myhostname).
type rootedResolver struct{ r *net.Resolver }

func newRootedResolver() rootedResolver {
	return rootedResolver{&net.Resolver{PreferGo: true}}
}

func (r rootedResolver) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if !strings.HasSuffix(host, ".") {
		host += "."
	}
	return r.r.LookupNetIP(ctx, network, host)
}
