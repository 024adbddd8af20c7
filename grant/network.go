package grant

import "slices"

// HasNetwork reports whether the grant names any host or private address,
// so a sandbox of its calls needs the egress proxy.
func (g *Grant) HasNetwork() bool { return len(g.hosts)+len(g.private) > 0 }

// PlainHTTPHosts returns the network.plain_http patterns in normal form
// ("name", "*.suffix", an IP literal, each with an optional ":port"), for
// http_fetch, which checks them again on every redirect inside the sandbox.
func (g *Grant) PlainHTTPHosts() []string {
	out := make([]string, 0, len(g.plainHTTP))
	for _, p := range g.plainHTTP {
		out = append(out, p.String())
	}
	return slices.Clip(out)
}

// Hosts returns the network.hosts and network.private patterns in normal
// form, for telling the model what its calls may reach.
func (g *Grant) Hosts() []string {
	out := make([]string, 0, len(g.hosts)+len(g.private))
	for _, p := range g.hosts {
		out = append(out, p.String())
	}
	for _, p := range g.private {
		out = append(out, p.String())
	}
	return slices.Clip(out)
}

// NetworkHosts returns the network.hosts patterns alone, in normal form.
func (g *Grant) NetworkHosts() []string {
	out := make([]string, 0, len(g.hosts))
	for _, p := range g.hosts {
		out = append(out, p.String())
	}
	return slices.Clip(out)
}

// NetworkPrivate returns the network.private entries alone (IPs, CIDRs
// and names), in normal form.
func (g *Grant) NetworkPrivate() []string {
	out := make([]string, 0, len(g.private))
	for _, p := range g.private {
		out = append(out, p.String())
	}
	return slices.Clip(out)
}
