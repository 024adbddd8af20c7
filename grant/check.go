package grant

import (
	"fmt"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"
)

// PathUse is one path a call touches.
type PathUse struct {
	Path  string // absolute, or relative to Call.Cwd
	Write bool   // the call may create or modify it
}

// Call is what one tool call would touch, for Check.
type Call struct {
	// Tool is the tool's name; it must be enabled.
	Tool string
	// Paths are the paths the call reads or writes.
	Paths []PathUse
	// Hosts are "host:port" the call connects to; a host without a port means 443.
	Hosts []string
	// Exec says the call runs arbitrary commands (its cwd must be granted).
	Exec bool
	// Cwd is the call's working directory, absolute or relative to the
	// grant's BaseDir; empty means BaseDir. Relative paths start from it. For
	// an Exec call it must be an existing directory in a granted path.
	Cwd string
}

// Decision is the outcome of Check.
type Decision struct {
	// Allowed says whether the grant allows the whole call.
	Allowed bool
	// Rule names the grant rules that allowed the call, or the one that refused it.
	Rule string
	// Reason says, in a sentence, why the call was refused; empty when allowed.
	Reason string
	// Risks lists what the call does that the grant allows only as a risk
	// (a writable protected path, a private address).
	Risks []string
	// Paths are the resolved paths of Call.Paths, in order, when allowed.
	// Open these, not the paths as given: the check cleans ".." lexically,
	// and the kernel would not when a symlink precedes the "..".
	Paths []string
	// Cwd is the resolved working directory when allowed.
	Cwd string
}

func refuse(rule, format string, args ...any) Decision {
	return Decision{Rule: rule, Reason: fmt.Sprintf(format, args...)}
}

// Check decides whether the grant allows a call. Apart from resolving the
// call's paths (Lstat and Readlink) it does no I/O. A path is made absolute
// against the call's cwd, cleaned lexically, resolved component by component
// (a missing tail is appended to its resolved parent, never taken raw), and
// compared with the resolved grant component-wise. Denied paths win over
// grants; protected paths and read-only grants refuse writes; anything outside
// every granted path is refused.
func (g *Grant) Check(c Call) Decision {
	if !g.ToolEnabled(c.Tool) {
		return refuse("tools.enabled", "the tool %q is not enabled by the grant", c.Tool)
	}
	rules := []string{"tools.enabled " + c.Tool}
	var risks []string
	cwd := g.base
	if c.Cwd != "" || c.Exec {
		p := c.Cwd
		if p == "" {
			p = g.base
		}
		if !filepath.IsAbs(p) {
			p = filepath.Join(g.base, p)
		}
		if c.Exec {
			// Commands run in their cwd, so it must be a granted directory.
			r := g.checkPath(p, false)
			if !r.ok {
				return refuse(r.rule, "working directory %q: %s", c.Cwd, r.reason)
			}
			if r.missing {
				return refuse(r.rule, "working directory %q does not exist", c.Cwd)
			}
			cwd = r.path
			rules = append(rules, r.rule)
		} else {
			// Otherwise cwd only anchors relative paths, each checked below.
			res, err := resolve(filepath.Clean(p))
			if err != nil || res.passesThroughProc() {
				return refuse("paths", "working directory %q cannot be resolved safely", c.Cwd)
			}
			cwd = res.path
		}
	}
	var paths []string
	for _, u := range c.Paths {
		if u.Path == "" {
			return refuse("paths", "an empty path")
		}
		p := u.Path
		if !filepath.IsAbs(p) {
			p = filepath.Join(cwd, p)
		}
		r := g.checkPath(p, u.Write)
		verb := "reading"
		if u.Write {
			verb = "writing"
		}
		if !r.ok {
			return refuse(r.rule, "%s %q: %s", verb, u.Path, r.reason)
		}
		rules = appendNew(rules, r.rule)
		risks = append(risks, r.risks...)
		paths = append(paths, r.path)
	}
	for _, hp := range c.Hosts {
		host, port, err := splitHostPort(hp)
		if err != nil {
			return refuse("network.hosts", "connecting to %q: %v", hp, err)
		}
		if port == 0 {
			port = 443
		}
		rule, ok := g.AllowHost(host, port)
		if !ok {
			return refuse("network.hosts", "connecting to %q: the grant does not allow this host and port", hp)
		}
		rules = appendNew(rules, rule)
		if strings.HasPrefix(rule, "network.private") {
			risks = append(risks, fmt.Sprintf("%s allowed by %s", hp, rule))
		}
	}
	return Decision{Allowed: true, Rule: strings.Join(rules, "; "), Risks: risks, Paths: paths, Cwd: cwd}
}

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// pathResult is the outcome for one path.
type pathResult struct {
	ok      bool
	path    string // resolved
	missing bool   // the resolved path does not exist
	rule    string
	reason  string
	risks   []string
}

// CheckPath decides whether the grant lets any enabled tool read (or, with
// write, modify) the absolute path p, ignoring tools and hosts. It answers
// questions such as "does this grant reach the audit directory?".
func (g *Grant) CheckPath(p string, write bool) Decision {
	if !filepath.IsAbs(p) {
		return refuse("paths", "%q is not absolute", p)
	}
	r := g.checkPath(p, write)
	if !r.ok {
		return refuse(r.rule, "%s", r.reason)
	}
	return Decision{Allowed: true, Rule: r.rule, Risks: r.risks, Paths: []string{r.path}}
}

// CheckResolved is CheckPath for a path already resolved: absolute, clean,
// and with no symlink among its components (as the kernel reports where an
// open file is, or as a caller that walked the path itself found it). It
// does no I/O: the locations it judges are p and each of its ancestors,
// which is what CheckPath judges for such a path. A caller that followed
// symlinks on the way judges each location it visited too.
func (g *Grant) CheckResolved(p string, write bool) Decision {
	if !filepath.IsAbs(p) || filepath.Clean(p) != p {
		return refuse("paths", "%q is not absolute and clean", p)
	}
	if len(p) > maxPath || strings.IndexByte(p, 0) >= 0 {
		return refuse("paths", "%q cannot be a path", clipPath(p))
	}
	res := resolved{path: p}
	for cur := p; cur != filepath.Dir(cur); cur = filepath.Dir(cur) {
		res.trail = append(res.trail, cur)
	}
	slices.Reverse(res.trail)
	r := g.judge(res, write)
	if !r.ok {
		return refuse(r.rule, "%s", r.reason)
	}
	return Decision{Allowed: true, Rule: r.rule, Risks: r.risks, Paths: []string{p}}
}

// checkPath checks one absolute path.
func (g *Grant) checkPath(p string, write bool) pathResult {
	res, err := resolve(filepath.Clean(p))
	if err != nil {
		return pathResult{rule: "paths", reason: err.Error()}
	}
	return g.judge(res, write)
}

// judge applies the grant's rules to a resolved path and every location
// its resolution visited.
func (g *Grant) judge(res resolved, write bool) pathResult {
	if res.passesThroughProc() {
		return pathResult{rule: "paths", reason: "it passes through /proc"}
	}
	locations := append(slices.Clip(res.trail), res.path)
	for _, loc := range locations {
		for _, d := range g.deny {
			if !within(loc, d) {
				continue
			}
			if name, ok := g.credentials[d]; ok {
				return pathResult{rule: credentialRule, reason: credentialReason(d, name)}
			}
			if g.sockets[d] {
				return pathResult{rule: socketRule, reason: socketReason(d)}
			}
			if d == g.tempDir {
				return pathResult{rule: tempDirRule, reason: fmt.Sprintf("%s is the host's temporary directory ($TMPDIR), hidden from the sandbox: other programs make their Unix sockets there at any time (ssh-agent, editors), which a sandbox could connect to; the sandbox has a /tmp of its own", d)}
			}
			return pathResult{rule: fmt.Sprintf("paths.deny %q", d), reason: fmt.Sprintf("%s is denied by the grant", d)}
		}
	}
	owner, ok := g.rootOf(res.path)
	if !ok {
		return pathResult{rule: "paths", reason: fmt.Sprintf("%s is outside every granted path; granted: %s", res.path, g.PathSummary())}
	}
	rule := owner.rule()
	if write && !owner.writable {
		if owner.homeTop {
			return pathResult{rule: rule, reason: fmt.Sprintf("%s is at the top of the home directory %s, which stays read-only when it is granted read-write (only its existing entries whose names do not start with a dot are writable): a new or changed file there could run code on the host; grant a directory in it instead", res.path, owner.path)}
		}
		return pathResult{rule: rule, reason: fmt.Sprintf("%s is granted read-only", res.path)}
	}
	var risks, overridden []string
	if write {
		for i, loc := range locations {
			final := i == len(locations)-1
			r, ok := g.rootOf(loc)
			if !ok || !r.writable || !r.dir {
				continue
			}
			name := protectedRule(ruleParts(loc, r.path), final)
			if name == "" {
				name = g.protectedAt(loc)
			}
			switch {
			case name == "":
			case g.writableProtected[name]:
				if !slices.Contains(overridden, name) {
					overridden = append(overridden, name)
					risks = append(risks, fmt.Sprintf("writes protected path %s, allowed by paths.writable_protected %q", loc, name))
				}
			case name == ownName:
				return pathResult{
					rule:   fmt.Sprintf("protected %q in %s", name, r.rule()),
					reason: fmt.Sprintf("%s is airlock's own (a grant file, or the airlock binary and its init) and stays read-only: a sandbox that changed it would widen its own next calls; no grant setting makes it writable", loc),
				}
			case isPathDirRule(name):
				v, file := pathRuleVariable(name)
				what := "in a directory on " + v
				if file {
					what = "the file $" + v + " names"
				}
				return pathResult{
					rule:   fmt.Sprintf("protected %q in %s", name, r.rule()),
					reason: fmt.Sprintf("%s is %s and stays read-only: %s; no grant setting makes it writable", loc, what, pathDirWhy(v)),
				}
			case name == linkedRule:
				return pathResult{
					rule:   fmt.Sprintf("protected %q in %s", name, r.rule()),
					reason: fmt.Sprintf("%s is %s and stays read-only: it is that file under another name; no grant setting makes it writable (remove the extra link)", loc, name),
				}
			case name == setIDRule || name == homeLinkRule:
				return pathResult{
					rule:   fmt.Sprintf("protected %q in %s", name, r.rule()),
					reason: fmt.Sprintf("%s is %s and stays read-only: a change to it would run as its owner for anyone on the host", loc, name),
				}
			default:
				return pathResult{
					rule:   fmt.Sprintf("protected %q in %s", name, r.rule()),
					reason: fmt.Sprintf("%s is a protected path (%s) and stays read-only; paths.writable_protected can allow it", loc, name),
				}
			}
		}
	}
	return pathResult{ok: true, path: res.path, missing: res.missing > 0, rule: rule, risks: risks}
}

// protectedAt returns the name of a protected path listed when the grant
// was built (such as the target of a symlinked .git/hooks) that holds loc.
func (g *Grant) protectedAt(loc string) string {
	for _, p := range g.protected {
		if within(loc, p.path) {
			return p.name
		}
	}
	return ""
}

// rule names the grant entry of a root.
func (r root) rule() string {
	key := "paths.read_only"
	if r.writable {
		key = "paths.read_write"
	}
	if r.given == r.path {
		return fmt.Sprintf("%s %q", key, r.given)
	}
	return fmt.Sprintf("%s %q (%s)", key, r.given, r.path)
}

// AllowHost reports whether the grant lets a call connect to host:port, and
// the rule that allows it. host is a name (matched after normalisation: lower
// case, no trailing dot, IDNA ASCII) or an IP literal (in brackets or not).
// Names listed in network.private match too; the proxy must still check every
// address a name resolves to (see AllowPrivate and AllowPrivateName).
func (g *Grant) AllowHost(host string, port int) (rule string, ok bool) {
	name, ip, ok := normaliseQuery(host, port)
	if !ok {
		return "", false
	}
	if r, ok := match(g.hosts, "network.hosts", name, ip, port); ok {
		return r, true
	}
	return match(g.private, "network.private", name, ip, port)
}

// AllowPrivate reports whether network.private lets a non-public address be
// dialled on port, and the rule that does. The entry's port holds however
// the address was reached: "127.0.0.1:8080" allows 8080 alone, also to a
// granted name that resolves there (an entry without a port, 80 and 443).
func (g *Grant) AllowPrivate(addr netip.Addr, port int) (rule string, ok bool) {
	addr = addr.Unmap()
	if addr.Zone() != "" {
		return "", false
	}
	for _, p := range g.private {
		if p.PortOK(port) && p.MatchAddr(addr) {
			return fmt.Sprintf("network.private %q", p.String()), true
		}
	}
	return "", false
}

// AllowPrivateName reports whether host:port is a name listed in
// network.private, whose addresses may be non-public.
func (g *Grant) AllowPrivateName(host string, port int) (rule string, ok bool) {
	name, _, ok := normaliseQuery(host, port)
	if !ok || name == "" {
		return "", false
	}
	return match(g.private, "network.private", name, netip.Addr{}, port)
}

// AllowPlainHTTP reports whether network.plain_http lets http_fetch use
// http:// (not only https://) for host:port. The host must also pass AllowHost.
func (g *Grant) AllowPlainHTTP(host string, port int) (rule string, ok bool) {
	name, ip, ok := normaliseQuery(host, port)
	if !ok {
		return "", false
	}
	return match(g.plainHTTP, "network.plain_http", name, ip, port)
}

func normaliseQuery(host string, port int) (string, netip.Addr, bool) {
	if port < 1 || port > 65535 {
		return "", netip.Addr{}, false
	}
	if strings.HasPrefix(host, "[") && strings.HasSuffix(host, "]") {
		host = host[1 : len(host)-1]
	}
	name, ip, err := normaliseHost(host)
	return name, ip, err == nil
}

func match(list []hostPattern, key, name string, ip netip.Addr, port int) (string, bool) {
	for _, p := range list {
		if p.Match(name, ip, port) {
			return fmt.Sprintf("%s %q", key, p.String()), true
		}
	}
	return "", false
}
