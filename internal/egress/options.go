package egress

import (
	"context"
	"io/fs"
	"log/slog"
	"net"
	"net/netip"
	"time"
)

// Policy says which destinations a sandbox may reach. It is consulted before
// any name is resolved. Implementations must be safe for concurrent use and
// must not do I/O: the proxy calls them on every connection.
type Policy interface {
	// AllowHost reports whether host:port is granted and which rule grants it.
	// host is already normalised (lowercase, no trailing dot, IDNA ASCII); for
	// an IP literal it is the address's canonical text (netip.Addr.String()),
	// so a policy that grants a private address or CIDR should also answer
	// AllowHost for addresses in it, with the ports it grants.
	AllowHost(host string, port int) (rule string, ok bool)
	// AllowPrivate reports whether a non-public address (see Classify) may be
	// dialled on port anyway because the grant names it or a CIDR that holds
	// it, with that port: the proxy asks it for every address a granted name
	// resolves to, so a port the entry does not grant stays refused however
	// the address was reached.
	AllowPrivate(addr netip.Addr, port int) (rule string, ok bool)
}

// PrivateNamer is an optional ability of a Policy: a name the grant lists as
// private (an internal mirror, a test fixture) may resolve to non-public
// addresses, whatever they are, except the unspecified address. This trusts
// that name's DNS answers completely — including an answer of 127.0.0.1 —
// so it is a risk the grant takes knowingly. An address allowed by
// AllowPrivate needs no PrivateNamer.
type PrivateNamer interface {
	AllowPrivateName(host string, port int) (rule string, ok bool)
}

// Resolver looks up a granted name. *net.Resolver satisfies it. The proxy
// calls it at most once per connection, with network "ip".
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Dialer opens the upstream connection. address is always "ip:port" holding
// the address the proxy checked; a Dialer must not resolve or rewrite it.
// *net.Dialer satisfies it.
type Dialer interface {
	DialContext(ctx context.Context, network, address string) (net.Conn, error)
}

// Decision is one audited verdict: one per connection the proxy handled,
// reported when the connection is refused or just before its tunnel opens
// (after the SNI check on port 443).
type Decision struct {
	Time    time.Time  // when the verdict was reached
	Sandbox string     // Options.Sandbox
	Proto   string     // "socks5", "connect", "http" or "socks4" (refused); "" if refused before the protocol was known
	Host    string     // normalised name or canonical IP literal, as requested
	Port    int        // requested port
	Addr    netip.Addr // the address dialled, or the answer that caused a denial; zero if none
	Allowed bool       // whether bytes flow
	Rule    string     // the policy rule(s) that allowed the host and any non-public address
	Reason  string     // "ok", or why it was denied
}

// Options configures a Proxy. A nil *Options means all defaults; New copies it.
type Options struct {
	// Sandbox names the sandbox this proxy serves, for Decisions and logs.
	Sandbox string
	// Policy decides what may be reached. Nil denies everything.
	Policy Policy
	// Resolver resolves granted names. Nil means Go's resolver (PreferGo)
	// asked for each name as fully qualified, so the host's resolv.conf
	// search list never turns a granted name into another (rooted.go). A
	// Resolver given here is called with the normalised name as it is.
	Resolver Resolver
	// Dialer dials checked addresses. Nil means a net.Dialer whose Control
	// hook re-checks that the address dialled is the one that was vetted.
	Dialer Dialer
	// OnDecision, if set, is called synchronously with every Decision. It must
	// be safe for concurrent use and should not block.
	OnDecision func(Decision)
	// Hold, if set, is asked before each connection is checked: an error
	// refuses it, with the error as the reason. The broker holds egress
	// while its audit records cannot be written, so no connection goes
	// through that could not be recorded. It must be safe for concurrent
	// use and should not block.
	Hold func() error
	// Logger receives debug and warning logs. Nil discards them.
	Logger *slog.Logger
	// MaxConns caps simultaneous connections through this proxy (default 64);
	// a further connection waits for a place up to HandshakeTimeout, then
	// is closed.
	MaxConns int
	// HandshakeTimeout bounds the SOCKS5/HTTP handshake, and the wait for the
	// TLS ClientHello on port 443 (default 10s).
	HandshakeTimeout time.Duration
	// IdleTimeout closes a tunnel after no byte moved in either direction for
	// between IdleTimeout and twice it (default 5m).
	IdleTimeout time.Duration
	// DialTimeout bounds resolving plus dialling (default 10s).
	DialTimeout time.Duration
	// MaxHandshakeBytes caps the bytes read before a tunnel opens: the SOCKS5
	// handshake or the HTTP request line and headers (default 16 KiB).
	MaxHandshakeBytes int
	// SocketMode is the permission of the socket ListenUnix creates (default
	// 0600). Use 0666 only when the sandbox runs as a uid other than the
	// broker's, and then keep the socket in a directory only that sandbox
	// can reach: the mode is the only thing between the socket and other
	// local users.
	SocketMode fs.FileMode
	// NoSNICheck turns off the ClientHello check on port 443.
	NoSNICheck bool
	// SocketBuffer, when positive, bounds the kernel's buffers of each
	// connection the proxy relays: the sandbox's side and the upstream's,
	// each direction, at about SocketBuffer/4 (SO_RCVBUF and SO_SNDBUF,
	// which the kernel doubles; no longer tuned upwards by it). Without it
	// a sandbox that opens tunnels to a fast server and never reads makes
	// the host hold each one's buffers at the system's maximum, charged to
	// no sandbox (AttachEgress sets it from the memory limit).
	SocketBuffer int
}

func (o *Options) withDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.Policy == nil {
		c.Policy = denyAll{}
	}
	if c.Resolver == nil {
		c.Resolver = newRootedResolver()
	}
	if c.Dialer == nil {
		c.Dialer = &net.Dialer{ControlContext: controlCheck}
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.MaxConns <= 0 {
		c.MaxConns = 64
	}
	if c.HandshakeTimeout <= 0 {
		c.HandshakeTimeout = 10 * time.Second
	}
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = 5 * time.Minute
	}
	if c.DialTimeout <= 0 {
		c.DialTimeout = 10 * time.Second
	}
	if c.MaxHandshakeBytes <= 0 {
		c.MaxHandshakeBytes = 16 << 10
	}
	if c.SocketMode == 0 {
		c.SocketMode = 0o600
	}
	return c
}

type denyAll struct{}

func (denyAll) AllowHost(string, int) (string, bool)        { return "", false }
func (denyAll) AllowPrivate(netip.Addr, int) (string, bool) { return "", false }
