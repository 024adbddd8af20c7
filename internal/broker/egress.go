package broker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/procid"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/tool"
	"github.com/airlockhq/airlock/wire"
)

// ProxyPort is the port on the sandbox's 127.0.0.1 where the forwarder to
// the egress proxy listens. The proxy sniffs the first byte, so the one port
// speaks both HTTP CONNECT (HTTP_PROXY, HTTPS_PROXY) and SOCKS5 (ALL_PROXY).
const ProxyPort = 3128

// EgressOptions configure the egress proxy of one sandbox. A nil
// *EgressOptions means the defaults.
type EgressOptions struct {
	// Sandbox names the sandbox (the call id) in decisions and logs.
	Sandbox string
	// OnDecision receives every allow and deny; see egress.Options.
	OnDecision func(egress.Decision)
	// Hold refuses every connection while it returns an error; see
	// egress.Options. A session sets its audit log's health.
	Hold func() error
	// Resolver and Dialer replace the system resolver and the checking
	// dialer (tests map names to fixture addresses with them).
	Resolver egress.Resolver
	Dialer   egress.Dialer
	// Env is added to the environment of a sandbox that reaches the network,
	// e.g. SSL_CERT_FILE naming a CA bundle in a read-only grant path.
	Env []string
	// Logger receives the proxy's logs; nil discards.
	Logger *slog.Logger
	// OnStop runs once the proxy has stopped, after its last decision.
	OnStop func()
	// Narrow, when set, must allow a destination too: remote hands narrow
	// their own grant by the calling broker's (egress.Both).
	Narrow egress.Policy
}

// ProxyEnv returns the proxy variables a sandbox with an egress proxy gets:
// HTTP_PROXY and HTTPS_PROXY (CONNECT), ALL_PROXY (socks5h, so names are
// resolved by the proxy, never inside), their lower-case forms, and an empty
// NO_PROXY so no destination bypasses the proxy.
func ProxyEnv() []string {
	hp := "http://127.0.0.1:" + strconv.Itoa(ProxyPort)
	socks := "socks5h://127.0.0.1:" + strconv.Itoa(ProxyPort)
	return []string{
		"HTTP_PROXY=" + hp, "HTTPS_PROXY=" + hp, "ALL_PROXY=" + socks,
		"http_proxy=" + hp, "https_proxy=" + hp, "all_proxy=" + socks,
		"NO_PROXY=", "no_proxy=",
	}
}

// AttachEgress starts an egress proxy for the one sandbox spec describes,
// enforcing g: a Unix socket in a fresh 0700 directory on the host, outside
// every path the grant makes visible. It sets spec.Network and adds
// ProxyEnv and o.Env to spec.Env. stop shuts the proxy down, closing every
// tunnel, and removes the directory; call it once the sandbox has ended.
func AttachEgress(ctx context.Context, g *grant.Grant, spec *sandbox.Spec, o *EgressOptions) (stop func(), err error) {
	var opts EgressOptions
	if o != nil {
		opts = *o
	}
	dir, err := socketDir(g)
	if err != nil {
		return nil, err
	}
	var policy egress.Policy = g
	if opts.Narrow != nil {
		policy = egress.Both(g, opts.Narrow)
	}
	p := egress.New(&egress.Options{
		Sandbox:      opts.Sandbox,
		Policy:       policy,
		Resolver:     opts.Resolver,
		Dialer:       opts.Dialer,
		OnDecision:   opts.OnDecision,
		Hold:         opts.Hold,
		Logger:       opts.Logger,
		MaxConns:     maxEgressConns,
		SocketBuffer: socketBuffer(spec.Limits.MemoryBytes),
	})
	sock := filepath.Join(dir, "proxy.sock")
	l, err := p.ListenUnix(sock)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("starting the egress proxy: %w", err)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := p.Serve(ctx, l); err != nil && opts.Logger != nil {
			opts.Logger.Warn("egress proxy stopped", "sandbox", opts.Sandbox, "err", err)
		}
	}()
	spec.Network = sandbox.Network{ProxySocket: sock, ProxyPort: ProxyPort, OnDecision: opts.OnDecision,
		Hosts: g.NetworkHosts(), Private: g.NetworkPrivate()}
	for _, kv := range append(ProxyEnv(), opts.Env...) {
		spec.Env = SetEnv(spec.Env, kv)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			<-done
			l.Close()
			if opts.OnStop != nil {
				opts.OnStop()
			}
			if err := os.RemoveAll(dir); err != nil && opts.Logger != nil {
				opts.Logger.Warn("removing the egress proxy's directory", "dir", dir, "err", err)
			}
		})
	}, nil
}

// maxEgressConns is how many connections one sandbox's proxy relays at once.
const maxEgressConns = 64

// socketBuffer is what the kernel may hold for one relayed connection
// (egress.Options.SocketBuffer): the sandbox's memory limit shared among
// its most connections, so that all its tunnels together hold no more of
// the host's memory than the sandbox may use itself (the proxy's sockets
// are the broker's, charged to no sandbox), and at least 1 MiB, so a
// small limit still gets usable windows. 0 (no bound: the kernel's own
// tuning) when that exceeds what the kernel would give a socket anyway.
func socketBuffer(memory int64) int {
	if memory <= 0 {
		return 0
	}
	per := max(memory/maxEgressConns, 1<<20)
	if per >= 64<<20 {
		return 0
	}
	return int(per)
}

// socketBases are where a proxy's socket directory may go, best first.
// /dev/shm lies in /dev, which no grant can mount (grant.NeverMounted), so
// no sandbox of any session sees a socket there. The others are the usual
// temporary directories, used only when /dev/shm is not usable: there a
// sandbox whose grant names the directory could connect to the socket and
// use this proxy, with this grant's hosts. socketDir checks this call's own
// grant, but it cannot know another session's.
var socketBases = func() []string { return []string{"/dev/shm", os.TempDir(), "/run"} }

// socketDir makes a fresh 0700 directory for a proxy socket in the first
// of socketBases that no grant can expose, else the first that this grant
// does not expose, so no sandbox can see another's socket through a
// granted path. The 0700 mode does not keep a sandbox out (its user is
// the broker's), so where the directory lies is what does.
func socketDir(g *grant.Grant) (string, error) {
	// The bases no grant can expose first, in their order, then the rest.
	var safe, rest []string
	for _, base := range socketBases() {
		if grant.NeverMounted(base) {
			safe = append(safe, base)
		} else {
			rest = append(rest, base)
		}
	}
	var errs []error
	for i, base := range append(safe, rest...) {
		if i >= len(safe) && (g.CheckPath(base, false).Allowed || g.CheckPath(filepath.Join(base, "airlock-egress-x"), false).Allowed) {
			errs = append(errs, fmt.Errorf("%s is visible through the grant", base))
			continue
		}
		// A name that says whose it is, so a sweep can take a killed
		// broker's; where that is too long for a socket's path (a long
		// TMPDIR, macOS's), the short name of old, which no sweep takes.
		var dir string
		var err error
		for _, pattern := range []string{egressDirPattern(), egressDirPrefix} {
			if dir, err = os.MkdirTemp(base, pattern); err != nil {
				break
			}
			// A long TMPDIR: the socket's path would not fit a Unix socket.
			if n := len(filepath.Join(dir, "proxy.sock")); n >= maxSocketPath {
				os.Remove(dir)
				dir, err = "", fmt.Errorf("%s: a socket there would have a path of %d bytes, past the %d a Unix socket takes", base, n, maxSocketPath-1)
				continue
			}
			break
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		return dir, nil
	}
	return "", fmt.Errorf("no private directory for the egress proxy's socket: %w", errors.Join(errs...))
}

// maxSocketPath is the size of sockaddr_un's path, with its NUL.
const maxSocketPath = 108

// egressDirPrefix begins the name of every proxy's socket directory.
const egressDirPrefix = "airlock-egress-"

// egressDirPattern is the MkdirTemp pattern of this process's proxy
// socket directories: egressDirPrefix, then the process (procid: pid and
// start time) and a short digest of its PID namespace (procid.Space, which
// whole would leave too little of a socket path's 108 bytes), then "-"
// and MkdirTemp's random part. A broker killed with SIGKILL cannot remove
// its directories; the name lets the next start of airlock tell them
// from a live broker's (sweepEgressDirs).
func egressDirPattern() string {
	return egressDirPrefix + egressOwner(procid.Self(), procid.Space()) + "-"
}

// egressOwner is the owner part of a socket directory's name: "PID-START"
// and, when the namespace is known, "." and 12 hex digits of its digest.
func egressOwner(id procid.ID, space string) string {
	if space == "" {
		return string(id)
	}
	sum := sha256.Sum256([]byte(space))
	return string(id) + "." + hex.EncodeToString(sum[:6])
}

// sweepEgressDirs removes the proxy socket directories that brokers which
// are gone left in socketBases: a broker killed with SIGKILL (or the OOM
// killer) never ran the stop that removes its call's directory, and nothing
// else ever did, so each such call left one in /dev/shm for good. Only a
// directory named by egressDirPattern for a process of this PID namespace
// that no longer runs, and owned by this user, is touched, and only its
// socket (under its name or the temporary one it is bound to) and then the
// directory itself are removed (never a tree): a directory with anything
// else in it stays.
func sweepEgressDirs(logger *slog.Logger) {
	here := ""
	if sp := procid.Space(); sp != "" {
		here = strings.TrimPrefix(egressOwner("", sp), ".")
	}
	for _, base := range socketBases() {
		ents, err := os.ReadDir(base)
		if err != nil {
			continue
		}
		// socketDir takes a base no grant can expose first, so a broker
		// that could write one (/dev/shm) put its directories nowhere
		// else: the temporary directories, which may be large, are not
		// listed then.
		last := grant.NeverMounted(base) && writableDir(base)
		for _, e := range ents {
			id, space, ok := egressDirOwner(e.Name())
			if !ok || !e.IsDir() || space != "" && space != here || id.Alive() {
				continue
			}
			dir := filepath.Join(base, e.Name())
			if !ownDir(dir) {
				continue
			}
			// The socket, or the temporary name it is bound to before
			// it is renamed (egress.Proxy.ListenUnix): a broker killed
			// between the two left that.
			inside, _ := os.ReadDir(dir)
			for _, f := range inside {
				if f.Type() == os.ModeSocket && (f.Name() == "proxy.sock" || strings.HasPrefix(f.Name(), ".egress-")) {
					_ = os.Remove(filepath.Join(dir, f.Name()))
				}
			}
			if err := os.Remove(dir); err != nil {
				logger.Debug("a dead broker's egress socket directory left", "dir", dir, "err", err)
			}
		}
		if last {
			return
		}
	}
}

// egressDirOwner returns the process and the namespace digest ("" when the
// name gives none) named by a socket directory's name, as egressDirPattern
// makes it. ok is false for any other name, an older broker's included
// (whose owner cannot be told, so it is left alone).
func egressDirOwner(name string) (id procid.ID, space string, ok bool) {
	rest, found := strings.CutPrefix(name, egressDirPrefix)
	i := strings.LastIndexByte(rest, '-')
	if !found || i < 0 {
		return "", "", false
	}
	owner, space, spaced := strings.Cut(rest[:i], ".")
	pid, start, timed := strings.Cut(owner, "-")
	if !digits(pid) || !timed || !digits(start) || spaced && (len(space) != 12 || !isHex(space)) {
		return "", "", false
	}
	id = procid.ID(owner)
	return id, space, id.PID() != 0
}

func digits(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

func isHex(s string) bool {
	return strings.Trim(s, "0123456789abcdef") == ""
}

// ownDir reports whether dir is a directory (not a link to one) of this
// process's effective user.
func ownDir(dir string) bool {
	fi, err := os.Lstat(dir)
	if err != nil || !fi.IsDir() {
		return false
	}
	uid, ok := fileOwner(fi)
	return ok && uid == os.Geteuid()
}

// sweepEgressOnce sweeps dead brokers' socket directories once per process.
var sweepEgressOnce sync.Once

// SetEnv sets kv ("K=V") in list, replacing an existing K, and returns
// the list.
func SetEnv(list []string, kv string) []string {
	k, _, _ := strings.Cut(kv, "=")
	for i, e := range list {
		if strings.HasPrefix(e, k+"=") {
			list[i] = kv
			return list
		}
	}
	return append(list, kv)
}

// dispatchEgress dispatches a call, first attaching an egress proxy when the
// call can use the network (a command, or a tool that names hosts) and the
// grant names any host. http_fetch also learns the proxy, the plain-HTTP
// hosts and where its secrets go.
func (s *Session) dispatchEgress(ctx context.Context, c *call, acc tool.Access, spec *sandbox.Spec, in *wire.ToolInput) Outcome {
	g := s.opts.Grant
	// Without a sandbox there is no network namespace to confine: a command
	// has the host's network (the result says UNSANDBOXED), and only
	// http_fetch, which dials the proxy's socket itself, uses the proxy.
	unsandboxed := s.opts.Backend.Report().Unsandboxed
	if !g.HasNetwork() || len(acc.Hosts) == 0 && (!acc.Exec || unsandboxed) {
		return dispatch(ctx, s.opts.Backend, spec, in)
	}
	stop, err := AttachEgress(ctx, g, spec, s.egressOptions(c, nil))
	if err != nil {
		return Outcome{Output: failure(SentenceCannotRun), Class: ClassSandbox, Detail: err.Error()}
	}
	defer stop()
	if len(acc.Hosts) > 0 {
		proxy := "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(ProxyPort))
		if unsandboxed {
			proxy = "unix:" + spec.Network.ProxySocket
		}
		in.Context.Egress = &wire.Egress{
			Proxy:     proxy,
			PlainHTTP: g.PlainHTTPHosts(),
			Secrets:   secretUses(g, in.Context.Secrets),
		}
	}
	return dispatch(ctx, s.opts.Backend, spec, in)
}

// secretUses says where each secret a call carries may go.
func secretUses(g *grant.Grant, secrets map[string]string) []wire.SecretUse {
	var out []wire.SecretUse
	for _, r := range g.Secrets() {
		if _, ok := secrets[r.Name]; ok {
			out = append(out, wire.SecretUse{Name: r.Name, Header: r.Header, Format: r.Format, Hosts: r.Hosts})
		}
	}
	return out
}

// egressOptions are the session's egress options for the proxy of call c:
// each decision is audited, then passed to also (when set).
func (s *Session) egressOptions(c *call, also func(egress.Decision)) *EgressOptions {
	var o EgressOptions
	if s.opts.Egress != nil {
		o = *s.opts.Egress
	}
	o.Sandbox = c.id
	rec := s.egressRecorder(c)
	o.OnDecision, o.OnStop = rec.decide, rec.flush
	o.Hold = s.log.Healthy // no connection the records could not hold
	if audited := o.OnDecision; also != nil {
		o.OnDecision = func(d egress.Decision) { audited(d); also(d) }
	}
	if o.Logger == nil {
		o.Logger = s.logger
	}
	return &o
}
