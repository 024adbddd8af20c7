package grant

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Grant is a parsed, validated and resolved grant. It is immutable and safe
// for concurrent use. Its printable form (String) holds no secret values; a
// Grant never holds any.
type Grant struct {
	source string   // file name or "flags"
	files  []string // the grant files it was built from, absolute
	spec   *spec    // what it was built from, for With
	base   string   // resolved directory relative paths start from

	roots []root   // most specific first
	deny  []string // resolved
	// credentials are the paths of deny that hideCredentials added, each
	// with its credentialTable name.
	credentials map[string]string
	// sockets are the paths of deny that hideSockets added: Unix sockets
	// found in read-write trees.
	sockets map[string]bool
	// tempDir is the path of deny that hideTempDir added: $TMPDIR.
	tempDir           string
	writableProtected map[string]bool
	protected         []protectedPath
	// unscanned are the read-write trees whose scan for protected paths
	// was incomplete (unscannedRisk).
	unscanned []string
	// socketsUnscanned are the read-only trees whose scan for Unix
	// sockets was incomplete (unscannedSocketsRisk).
	socketsUnscanned []string

	hosts     []hostPattern
	private   []hostPattern
	plainHTTP []hostPattern

	limits          Limits
	toolLimits      map[string]Limits
	allowUnenforced bool // limits.unenforced = "allow"
	tools           map[string]bool
	wasmTools       []WasmTool
	secrets         []SecretRule

	search      *Search // web_search's provider, nil without one
	searchHost  string  // its endpoint's host:port
	maxSearches int     // limits.searches
	searchesSet bool
	remote      Remote
	runner      Runner // [runner]
}

// spec is a grant as written, before validation: from TOML or from Flags.
type spec struct {
	source, base                                 string
	files                                        []string // the grant files behind it, absolute: its own (Load, Parse), an earlier grant's (With)
	readWrite, readOnly, deny, writableProtected []string
	hosts, private, plainHTTP                    []string
	limits                                       Limits
	toolLimits                                   map[string]Limits
	unenforced                                   string // limits.unenforced as written; "" = unset
	tools                                        []string
	toolsSet                                     bool
	wasmTools                                    []wasmToolSpec
	secrets                                      []secretSpec
	searchProvider, searchEndpoint               string // tools.web_search
	searches                                     int    // limits.searches
	searchesSet                                  bool
	remote                                       Remote // [remote] as written
	remoteSet                                    bool
	runner                                       Runner // [runner]
}

var (
	keyReadWrite  = []string{"paths", "read_write"}
	keyReadOnly   = []string{"paths", "read_only"}
	keyDeny       = []string{"paths", "deny"}
	keyWritable   = []string{"paths", "writable_protected"}
	keyHosts      = []string{"network", "hosts"}
	keyPrivate    = []string{"network", "private"}
	keyPlainHTTP  = []string{"network", "plain_http"}
	keyUnenforced = []string{"limits", "unenforced"}
)

// Values of limits.unenforced: what a call does when the host cannot
// enforce its memory or process limit (no cgroup the user may manage).
const (
	// UnenforcedRefuse refuses the call, naming the limits and how to
	// delegate a cgroup. It is the default.
	UnenforcedRefuse = "refuse"
	// UnenforcedAllow runs the call anyway; its result (label, audit
	// record) names the limits that did not hold.
	UnenforcedAllow = "allow"
)

// build validates s and resolves its paths, recording every problem in ps.
// It returns nil when there is any.
func build(s *spec, ps *problems) *Grant {
	g := &Grant{source: s.source, spec: s, writableProtected: map[string]bool{}, toolLimits: map[string]Limits{}}
	g.files = slices.Clone(s.files)
	g.runner = s.runner
	if !filepath.IsAbs(s.base) {
		ps.add(nil, "base directory %q is not absolute", s.base)
		return nil
	}
	base, err := resolve(filepath.Clean(s.base))
	if err == nil && base.missing > 0 {
		err = errors.New("no such directory")
	}
	if err != nil {
		ps.add(nil, "base directory %q cannot be used: %v", s.base, err)
		return nil
	}
	g.base = base.path
	if s.remoteSet {
		g.remote = checkRemote(s.remote, g.base, ps)
	}

	// Paths.
	seen := map[string][]string{}
	mounts := readMounts()
	for _, set := range []struct {
		key      []string
		list     []string
		writable bool
	}{{keyReadWrite, s.readWrite, true}, {keyReadOnly, s.readOnly, false}} {
		for _, p := range set.list {
			r, err := resolveRoot(p, g.base, set.writable)
			if err != nil {
				ps.addValue(set.key, p, "%v", err)
				continue
			}
			if point, typ, ok := kernelMount(r.path, mounts); ok {
				mode := "read-only"
				if set.writable {
					mode = "read-write"
				}
				ps.addValue(set.key, p, "cannot mount %q %s: the %s file system mounted at %s would come with it, the kernel's own interface to the host (its processes, devices or settings), not files; grant directories that hold no such mount, or unmount it", p, mode, typ, point)
				continue
			}
			if self, held := mountAliases(r.path, mounts); len(self)+len(held) > 0 {
				mode := "read-only"
				if set.writable {
					mode = "read-write"
				}
				if why := aliasRefusal(self, held, set.writable); why != "" {
					ps.addValue(set.key, p, "cannot mount %q %s: %s", p, mode, why)
					continue
				}
			}
			if k, dup := seen[r.path]; dup {
				ps.addValue(set.key, p, "%q is %s, already granted by %s", p, r.path, joinKey(k))
				continue
			}
			seen[r.path] = set.key
			g.roots = append(g.roots, r)
		}
	}
	// Most specific first, so the first root that holds a path is the one that rules it.
	slices.SortStableFunc(g.roots, func(a, b root) int { return len(b.path) - len(a.path) })
	// A granted path that passes through a symlink inside a read-write tree
	// is refused: a sandbox could have planted that link in an earlier
	// call, to have a later grant mount any host path.
	g.roots = slices.DeleteFunc(g.roots, func(r root) bool {
		l, w, bad := plantedLink(r.links, g.roots)
		if bad {
			key := keyReadOnly
			if r.writable {
				key = keyReadWrite
			}
			ps.addValue(key, r.given, "%q passes through the symlink %s inside the read-write tree %q, which a sandbox could have planted; grant the path it points to (%s) directly", r.given, l, w.given, r.path)
		}
		return bad
	})

	gl := readGitGlobals()
	g.roots = splitHomes(g.roots, gl)
	// A read-write grant of the hooks directory the user's configuration
	// names (or of one inside it) would let a sandbox run code in every
	// repository; it cannot be protected from inside the tree.
	for _, hd := range gl.hooksDirs {
		for _, r := range g.roots {
			if r.writable && within(r.path, hd) {
				ps.addValue(keyReadWrite, r.given, "%q (%s) is the hooks directory git runs in every repository (core.hooksPath of the user's or the system's configuration); grant it read-only", r.given, r.path)
			}
		}
	}
	// So would one of the template directory whose hooks git copies into
	// every new repository.
	for _, td := range gl.templateDirs {
		for _, r := range g.roots {
			if r.writable && within(r.path, td) {
				ps.addValue(keyReadWrite, r.given, "%q (%s) is the template directory git copies into every new repository, hooks included (init.templateDir of the user's or the system's configuration); grant it read-only", r.given, r.path)
			}
		}
	}

	// So would one of a directory on PATH, where the user's next command
	// is looked up (one inside a read-write tree stays read-only instead:
	// pathDirsIn).
	for _, d := range pathDirs() {
		for _, r := range g.roots {
			if r.writable && r.path == d.path && !d.file {
				ps.addValue(keyReadWrite, r.given, "%q (%s) is on %s: %s; grant it read-only", r.given, r.path, d.variable, pathDirWhy(d.variable))
			}
		}
	}

	for _, n := range s.writableProtected {
		if !slices.Contains(ProtectedNames(), n) {
			ps.addValue(keyWritable, n, "%q is not a protected name (names: %s)", n, strings.Join(ProtectedNames(), ", "))
			continue
		}
		g.writableProtected[n] = true
	}
	// Nor may a read-write grant be, or lie in, what a home directory's
	// protected entries name (~/.config/systemd, ~/.local/bin): held
	// read-only inside a tree that holds them, they would be writable as
	// the tree itself.
	for _, r := range g.roots {
		if !r.writable {
			continue
		}
		if e, hp, ok := homeEntryHolding(r.path); ok && !g.writableProtected[e.Name] {
			ps.addValue(keyReadWrite, r.given, "%q (%s) is in %s, a home directory's %s, which stays read-only (%s); grant it read-only, or list %q under paths.writable_protected", r.given, r.path, hp, e.Name, e.Reader, e.Name)
		}
	}
	// A read-write grant nested in another must not be one of its protected paths.
	for _, in := range g.roots {
		for _, out := range g.roots {
			if !in.writable || !out.writable || !out.dir || in.path == out.path || !within(in.path, out.path) {
				continue
			}
			if name := protectedRule(ruleParts(in.path, out.path), true); name != "" && !g.writableProtected[name] {
				ps.addValue(keyReadWrite, in.given, "%q is protected (%s) inside %q; list %q under paths.writable_protected to grant it", in.given, name, out.given, name)
			}
		}
	}
	g.hideTempDir()
	for _, d := range s.deny {
		if d == "" {
			ps.add(keyDeny, "empty path")
			continue
		}
		if why := tildePath(d); why != "" {
			ps.addValue(keyDeny, d, "%s", why)
			continue
		}
		if strings.ContainsAny(d, "*?[") {
			ps.addValue(keyDeny, d, "%q is a pattern; paths.deny takes paths, not globs: list each path (or the directory holding them)", d)
			continue
		}
		abs := d
		if !filepath.IsAbs(abs) {
			abs = filepath.Join(g.base, abs)
		}
		r, err := resolve(filepath.Clean(abs))
		if err != nil {
			ps.addValue(keyDeny, d, "%v", err)
			continue
		}
		if l, w, bad := plantedLink(r.links, g.roots); bad {
			ps.addValue(keyDeny, d, "%q passes through the symlink %s inside the read-write tree %q, which a sandbox could have planted; deny the path it points to (%s) directly", d, l, w.given, r.path)
			continue
		}
		owner, ok := g.rootOf(r.path)
		switch {
		case !ok:
			ps.addValue(keyDeny, d, "%q (%s) is not inside any granted path", d, r.path)
		case owner.path == r.path:
			ps.addValue(keyDeny, d, "%q denies the whole granted path %q; remove the grant instead", d, owner.given)
		default:
			g.deny = append(g.deny, r.path)
		}
	}
	g.hideCredentials()
	sc := g.scanTrees(gl)
	g.protected, g.unscanned, g.socketsUnscanned = sc.protected, sc.unscanned, sc.socketsUnscanned
	g.hideSockets(sc.sockets)
	slices.Sort(g.deny)
	g.deny = slices.Compact(g.deny)
	g.refuseFoldingTrees(ps)

	// Network.
	for _, h := range s.hosts {
		p, err := parsePublicHost(h)
		if err != nil {
			var np *notPublicError
			if s.source == "flags" && errors.As(err, &np) {
				ps.addValue(keyHosts, h, "%v%s", err, notPublicFlagHint)
				continue
			}
			ps.addValue(keyHosts, h, "%v", err)
			continue
		}
		g.hosts = append(g.hosts, p)
	}
	for _, h := range s.private {
		p, err := parsePrivate(h)
		if err != nil {
			ps.addValue(keyPrivate, h, "%v", err)
			continue
		}
		g.private = append(g.private, p)
	}
	for _, h := range s.plainHTTP {
		p, err := parseHostPattern(h)
		if err != nil {
			ps.addValue(keyPlainHTTP, h, "%v", err)
			continue
		}
		g.plainHTTP = append(g.plainHTTP, p)
	}

	// Limits and tools.
	s.limits.check([]string{"limits"}, ps)
	g.limits = DefaultLimits.over(s.limits)
	g.allowUnenforced = s.unenforced == UnenforcedAllow
	for t, l := range s.toolLimits {
		l.check([]string{"tools", t}, ps)
		g.toolLimits[t] = g.limits.over(l)
	}
	g.tools = checkTools(s, ps)
	g.checkSearch(s, ps)
	g.buildWasmTools(s.wasmTools, ps)

	// Secrets.
	allowed := append(slices.Clone(g.hosts), g.private...)
	names := map[string]bool{}
	for _, sec := range s.secrets {
		if names[sec.name] {
			ps.add([]string{"secrets", sec.name}, "defined twice")
			continue
		}
		names[sec.name] = true
		r, ok := checkSecret(sec, g.base, g.tools, allowed, ps)
		if !ok {
			continue
		}
		if file, isFile := strings.CutPrefix(r.Source, "file:"); isFile {
			// The sandbox must not be able to read a secret's file itself.
			if d := g.CheckPath(file, false); d.Allowed {
				ps.add([]string{"secrets", sec.name, "from"}, "%s is inside %s, so the sandbox could read it", file, d.Rule)
				continue
			}
			// The broker reads the file on the host whenever a session
			// opens (and on first use): a symlink on its way that lies in a
			// read-write tree is the sandbox's to point at any host file,
			// which would then be sent, as the secret, to the secret's hosts.
			res, err := resolve(file)
			if err != nil {
				ps.add([]string{"secrets", sec.name, "from"}, "%s cannot be resolved safely: %v", file, err)
				continue
			}
			if l, w, bad := plantedLink(res.links, g.roots); bad {
				ps.add([]string{"secrets", sec.name, "from"}, "%s passes through the symlink %s inside the read-write tree %q, which a sandbox could replace; name the file it points to (%s) directly", file, l, w.given, res.path)
				continue
			}
		}
		g.secrets = append(g.secrets, r)
	}
	if len(ps.list) > 0 {
		return nil
	}
	return g
}

// rootOf returns the most specific granted root holding the resolved path p.
func (g *Grant) rootOf(p string) (root, bool) {
	for _, r := range g.roots {
		if within(p, r.path) {
			return r, true
		}
	}
	return root{}, false
}

// Mount is one granted path to make visible in a sandbox.
type Mount struct {
	Source   string // resolved absolute host path (no symlink components at load)
	Writable bool
	Dir      bool // a directory; otherwise a regular file
}

// Mounts returns the granted paths, least specific first, so that mounting in
// order puts a nested grant on top of the one holding it.
func (g *Grant) Mounts() []Mount {
	out := make([]Mount, 0, len(g.roots))
	for i := len(g.roots) - 1; i >= 0; i-- {
		r := g.roots[i]
		out = append(out, Mount{Source: r.path, Writable: r.writable, Dir: r.dir})
	}
	return out
}

// PathSummary says what the grant's calls may touch, for the model: each
// granted path, least specific first, with its mode ("/w (read-write),
// /usr/share (read-only)"), or "no paths". Denied and protected paths are
// left out: it reveals nothing the grant hides.
func (g *Grant) PathSummary() string {
	if len(g.roots) == 0 {
		return "no paths"
	}
	var parts []string
	for _, m := range g.Mounts() {
		mode := "read-only"
		if m.Writable {
			mode = "read-write"
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", m.Source, mode))
	}
	return strings.Join(parts, ", ")
}

// Masks returns the denied paths, resolved and absolute, each inside a
// granted tree. A masked path may not exist yet; a backend must keep it from
// being created as well as hide it.
func (g *Grant) Masks() []string { return slices.Clone(g.deny) }

// Protected returns the protected paths inside read-write trees that must
// stay read-only, resolved and absolute, whether or not they exist yet: the
// names of ProtectedNames at the top of each tree and nested ones found when
// the grant was built. Names listed in paths.writable_protected are left out.
// Check refuses writes to protected paths at any depth regardless.
func (g *Grant) Protected() []string {
	out := make([]string, len(g.protected))
	for i, p := range g.protected {
		out[i] = p.path
	}
	return out
}

// ProtectedDirs returns the paths of Protected that name directories
// (.vscode, .git/hooks), which a backend holds as empty directories when
// they are missing; it holds the others as empty files.
func (g *Grant) ProtectedDirs() []string {
	var out []string
	for _, p := range g.protected {
		if p.dir {
			out = append(out, p.path)
		}
	}
	return out
}

// BaseDir is the resolved directory relative paths in the grant start from
// (the grant file's directory, or the working directory for flags), and the
// working directory of calls that do not name one.
func (g *Grant) BaseDir() string { return g.base }

// ToolEnabled reports whether the grant enables the tool.
func (g *Grant) ToolEnabled(name string) bool { return g.tools[name] || g.hasWasmTool(name) }

// EnabledTools returns the enabled tools in the order of ToolNames.
func (g *Grant) EnabledTools() []string {
	return slices.DeleteFunc(slices.Clone(toolNames), func(t string) bool { return !g.tools[t] })
}

// LimitsFor returns the limits of one tool: its overrides on top of the
// grant's limits on top of DefaultLimits.
func (g *Grant) LimitsFor(tool string) Limits {
	if l, ok := g.toolLimits[tool]; ok {
		return l
	}
	return g.limits
}

// AllowsUnenforcedLimits reports whether calls run when the host cannot
// enforce their memory or process limit (limits.unenforced = "allow", or
// Flags.AllowUnenforcedLimits); by default they are refused.
func (g *Grant) AllowsUnenforcedLimits() bool { return g.allowUnenforced }

// Secrets returns the grant's secret rules (sources, never values).
func (g *Grant) Secrets() []SecretRule {
	out := make([]SecretRule, len(g.secrets))
	for i, s := range g.secrets {
		s.Tools = slices.Clone(s.Tools)
		s.Hosts = slices.Clone(s.Hosts)
		out[i] = s
	}
	return out
}

// Risks lists what the grant allows that weakens isolation, for display.
func (g *Grant) Risks() []string {
	var out []string
	for _, p := range g.private {
		out = append(out, fmt.Sprintf("network.private %q: non-public addresses may be dialled", p.String()))
	}
	for _, p := range g.plainHTTP {
		out = append(out, fmt.Sprintf("network.plain_http %q: unencrypted http is allowed", p.String()))
	}
	for _, n := range slices.Sorted(mapKeys(g.writableProtected)) {
		out = append(out, fmt.Sprintf("paths.writable_protected %q: the sandbox may write it", n))
	}
	if g.allowUnenforced {
		out = append(out, `limits.unenforced "allow": calls run even where the host cannot enforce their memory and process limits`)
	}
	return append(out, g.ScanRisks()...)
}

// ScanRisks returns those of Risks that say a read-write tree was not
// scanned whole for protected paths, or a read-only one for Unix sockets.
// Unlike the others, which a grant asks
// for, these come from the trees themselves (one a sandbox filled, say),
// so a front end shows them as warnings when a session starts.
func (g *Grant) ScanRisks() []string {
	var out []string
	for _, t := range g.unscanned {
		out = append(out, unscannedRisk(t))
	}
	for _, t := range g.socketsUnscanned {
		out = append(out, unscannedSocketsRisk(t))
	}
	return out
}

// unscannedRisk says what an incomplete scan of the read-write tree t
// leaves: the scan stops after maxProtectedScan entries (and a directory
// it cannot list, or a bound of configReader, stops it short too), so what
// lies beyond is neither found nor mounted read-only. A set-ID file there
// can be rewritten through a shared mapping, keeping its bit.
func unscannedRisk(t string) string {
	n := fmt.Sprintf("%d,%03d", maxProtectedScan/1000, maxProtectedScan%1000)
	return fmt.Sprintf("read-write tree %q was not scanned whole (more than %s entries, or a directory or git configuration the scan could not read): "+
		"files past the first %s entries are not checked for protected names or set-ID bits, "+
		"so a set-ID file or a protected path among them is not mounted read-only (file tools still refuse protected names)",
		t, n, n)
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// String describes the grant in a stable, canonical form without secret
// values. Two grants with the same String allow the same calls.
func (g *Grant) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "base %s\n", g.base)
	for _, m := range g.Mounts() {
		mode := "ro"
		if m.Writable {
			mode = "rw"
		}
		fmt.Fprintf(&b, "%s %s\n", mode, m.Source)
	}
	for _, d := range g.deny {
		fmt.Fprintf(&b, "deny %s\n", d)
	}
	for _, p := range g.protected {
		fmt.Fprintf(&b, "protected %s (%s)\n", p.path, p.name)
	}
	for _, n := range slices.Sorted(mapKeys(g.writableProtected)) {
		fmt.Fprintf(&b, "writable_protected %s\n", n)
	}
	for _, set := range []struct {
		name string
		list []hostPattern
	}{{"host", g.hosts}, {"private", g.private}, {"plain_http", g.plainHTTP}} {
		for _, p := range set.list {
			fmt.Fprintf(&b, "%s %s\n", set.name, p)
		}
	}
	fmt.Fprintf(&b, "limits %s\n", g.limits)
	if g.allowUnenforced {
		fmt.Fprintf(&b, "limits.unenforced %s\n", UnenforcedAllow)
	}
	for _, t := range toolNames {
		if g.tools[t] {
			fmt.Fprintf(&b, "tool %s limits %s\n", t, g.LimitsFor(t))
		}
	}
	b.WriteString(g.wasmToolsString())
	for _, s := range g.secrets {
		fmt.Fprintf(&b, "secret %s\n", s)
	}
	b.WriteString(g.searchString())
	return b.String()
}

// ID is a short, stable hash of String: grants with the same ID allow the
// same calls, so it can label sandboxes and pools.
func (g *Grant) ID() string {
	sum := sha256.Sum256([]byte(g.String()))
	return hex.EncodeToString(sum[:8])
}

// String renders limits in grant syntax.
func (l Limits) String() string {
	return fmt.Sprintf("time=%s memory=%s processes=%d output=%s file_size=%s tmp=%s",
		l.Time, FormatSize(l.Memory), l.Processes, FormatSize(l.Output), FormatSize(l.FileSize), FormatSize(l.Tmp))
}

// Files returns the grant files this grant was built from (absolute), also
// through With.
func (g *Grant) Files() []string { return slices.Clone(g.files) }

// ownName is the rule name of airlock's own files kept read-only (Guard).
const ownName = "airlock's own file"

// Guard returns g with airlock's own files kept from its sandboxes: each
// path of hide (token files, the records directory, secret files) that lies
// in a granted tree is denied, as paths.deny would (hidden from the sandbox
// and refused to its tools, even if missing), and each path of keep (the
// grant files, the running binary) that lies in a read-write tree stays
// read-only, like a protected path that paths.writable_protected cannot
// open. Paths outside every grant are left alone. A path that is a granted
// root itself, or holds one, cannot be kept this way, nor one reached
// through a symlink inside a read-write tree (which a sandbox could
// replace): that is an error naming it. g is unchanged.
func (g *Grant) Guard(hide, keep []string) (*Grant, error) {
	c := *g
	c.deny = slices.Clone(g.deny)
	c.protected = slices.Clone(g.protected)
	for _, set := range []struct {
		list []string
		hide bool
	}{{hide, true}, {keep, false}} {
		for _, p := range set.list {
			if p == "" {
				continue
			}
			if !filepath.IsAbs(p) {
				return nil, fmt.Errorf("airlock's own path %q is not absolute", p)
			}
			r, err := resolve(filepath.Clean(p))
			if err != nil {
				return nil, fmt.Errorf("airlock's own path %q: %w", p, err)
			}
			// A symlink on its way inside a read-write tree is the
			// sandbox's to replace: the next session would load its grant,
			// read its token or write its records where it points.
			if l, w, bad := plantedLink(r.links, g.roots); bad {
				return nil, fmt.Errorf("airlock's own %s passes through the symlink %s inside the read-write tree %q, which a sandbox could replace; name the path it leads to (%s) directly", p, l, w.given, r.path)
			}
			for _, x := range g.roots {
				if within(x.path, r.path) && (set.hide || x.writable) {
					return nil, fmt.Errorf("the grant gives the sandbox %s (%s), which holds airlock's own %s; grant a directory that does not hold it, or move it out", x.given, x.path, r.path)
				}
			}
			owner, ok := c.rootOf(r.path)
			switch {
			case !ok:
			case set.hide:
				if folds, evidence := treeFolds(owner.path); folds && !owner.writable {
					return nil, fmt.Errorf("the grant gives the sandbox %s (%s), which holds airlock's own %s, on a file system that may fold case (%s): hiding it would not hide its other spellings; grant a directory that does not hold it", owner.given, owner.path, r.path, evidence)
				}
				c.deny = append(c.deny, r.path)
			case owner.writable:
				fi, err := os.Lstat(r.path)
				c.protected = append(c.protected, protectedPath{path: r.path, name: ownName, dir: err == nil && fi.IsDir()})
			}
		}
	}
	slices.Sort(c.deny)
	c.deny = slices.Compact(c.deny)
	c.protected = sortProtected(c.protected)
	return &c, nil
}

// treeScan is what scanTrees finds.
type treeScan struct {
	protected        []protectedPath // sorted
	sockets          []string        // Unix sockets in granted trees (hideSockets)
	unscanned        []string        // read-write trees not scanned whole
	socketsUnscanned []string        // read-only trees not scanned whole for sockets
}

// scanTrees finds the protected paths of g's read-write trees (and the
// links of home directories' read-only tops), the Unix sockets in every
// granted tree, and the trees not scanned whole.
func (g *Grant) scanTrees(gl *gitGlobals) treeScan {
	var protected []protectedPath
	var unscanned []string
	// The scan of a read-write tree leaves out the trees nested in it that
	// have scans of their own, and home directories' read-only tops.
	var writableDirs []string
	for _, r := range g.roots {
		if r.dir && (r.writable || r.homeTop) {
			writableDirs = append(writableDirs, r.path)
		}
	}
	for _, r := range g.roots {
		if r.writable && r.dir {
			list, complete := protectedPaths(r.path, g.writableProtected, writableDirs, gl)
			if r.homeDir {
				list = slices.DeleteFunc(list, func(p protectedPath) bool { return filepath.Dir(p.path) == r.path && !exists(p.path) })
			}
			protected = append(protected, list...)
			if !complete {
				unscanned = append(unscanned, r.path)
			}
		}
	}
	protected = append(protected, g.pathDirsIn(pathDirs())...)
	homeHeld := false
	home := userHome()
	for _, r := range g.roots {
		if r.homeTop {
			protected = append(protected, g.homeLinks(r.path)...)
		}
		if home != "" && within(home, r.path) {
			homeHeld = true
		}
	}
	if home != "" && !homeHeld && len(writableDirs) > 0 {
		protected = append(protected, g.homeStartupRefs(home)...)
	}
	protected, sockets := splitSockets(protected)
	roSockets, socketsUnscanned := g.readOnlySockets()
	return treeScan{
		protected:        sortProtected(protected),
		sockets:          append(sockets, roSockets...),
		unscanned:        unscanned,
		socketsUnscanned: socketsUnscanned,
	}
}

// refuseFoldingTrees refuses each granted directory whose masks or
// protected paths a sandbox could pass by spelling a name in another case
// (treeFolds): a read-write one (it always has protected paths) and a
// read-only one holding a denied path.
func (g *Grant) refuseFoldingTrees(ps *problems) {
	for _, r := range g.roots {
		if !r.dir {
			continue
		}
		masked := r.writable || slices.ContainsFunc(g.deny, func(d string) bool { return within(d, r.path) })
		if !masked {
			continue
		}
		if folds, evidence := treeFolds(r.path); folds {
			key := keyReadOnly
			if r.writable {
				key = keyReadWrite
			}
			ps.addValue(key, r.given, "%q (%s) is on a file system that may fold case (%s) where a mount over a name does not cover its other spellings: a sandbox could reach a protected or denied path as .GIT/hooks or .ENV; grant a directory on a case-sensitive file system (ext4, xfs, btrfs, tmpfs, or a container volume)", r.given, r.path, evidence)
		}
	}
}

// Rescan returns a copy of g whose read-write trees are scanned for
// protected paths again, keeping what g protects already: a long-lived
// server (airlock serve) opens each session with it, so a repository one
// session made (git init) is protected from the next session on, as it is
// for the next airlock process. A home directory's credential store made
// since (gh auth login) is hidden from then on too, as is a Unix socket
// a host service made in a read-write tree.
func (g *Grant) Rescan() *Grant {
	c := *g
	c.deny = slices.Clone(g.deny)
	c.credentials = maps.Clone(g.credentials)
	c.sockets = maps.Clone(g.sockets)
	c.hideCredentials()
	sc := g.scanTrees(readGitGlobals())
	c.hideSockets(sc.sockets)
	slices.Sort(c.deny)
	c.deny = slices.Compact(c.deny)
	c.protected = append(slices.Clone(g.protected), sc.protected...)
	c.protected = sortProtected(c.protected)
	c.unscanned, c.socketsUnscanned = sc.unscanned, sc.socketsUnscanned
	return &c
}

// sortProtected sorts list by path and drops repeated paths (the first of
// each is kept), in place.
func sortProtected(list []protectedPath) []protectedPath {
	slices.SortStableFunc(list, func(a, b protectedPath) int { return strings.Compare(a.path, b.path) })
	return slices.CompactFunc(list, func(a, b protectedPath) bool { return a.path == b.path })
}
