package grant

// Source names where the grant came from: the file name given to Load or
// Parse, or "flags".
func (g *Grant) Source() string { return g.source }

// AllowsHost reports whether the secret may be sent to hostport ("host",
// "host:port" or "[v6]:port"; no port means 443). The host is normalised and
// matched label by label, exactly like the grant's network.hosts.
func (r SecretRule) AllowsHost(hostport string) bool {
	host, port, err := splitHostPort(hostport)
	if err != nil {
		return false
	}
	if port == 0 {
		port = 443
	}
	name, ip, ok := normaliseQuery(host, port)
	if !ok {
		return false
	}
	var patterns []hostPattern
	for _, s := range r.Hosts {
		if p, err := parseHostPattern(s); err == nil {
			patterns = append(patterns, p)
		}
	}
	_, ok = match(patterns, "", name, ip, port)
	return ok
}

// NamesDirectory reports whether the grant names any directory (read-write
// or read-only): when it does not (a grant of hosts alone), WorkDir is a
// directory no sandbox can see.
func (g *Grant) NamesDirectory() bool {
	for _, r := range g.roots {
		if r.dir {
			return true
		}
	}
	return false
}

// WorkDir is the working directory of calls that do not name one: BaseDir
// when a granted directory holds it, else the first read-write directory,
// else the first granted directory.
func (g *Grant) WorkDir() string {
	if r, ok := g.rootOf(g.base); ok && r.dir {
		return g.base
	}
	for _, writable := range []bool{true, false} {
		for i := len(g.roots) - 1; i >= 0; i-- {
			if r := g.roots[i]; r.dir && r.writable == writable {
				return r.path
			}
		}
	}
	return g.base
}
