package egress

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/airlockhq/airlock/internal/egress/forward"
)

// Proxy is the egress proxy for one sandbox. Create it with New; it is safe
// for concurrent use, and Serve may be called on several listeners.
type Proxy struct {
	o      Options
	sem    chan struct{}
	rights rightsBudget
}

// New returns a Proxy configured by opts (which may be nil and is copied).
func New(opts *Options) *Proxy {
	o := opts.withDefaults()
	return &Proxy{o: o, sem: make(chan struct{}, o.MaxConns), rights: make(rightsBudget, 1)}
}

// rightsBudget bounds the descriptors a proxy holds at once on its
// sandbox's behalf, between a read on its socket that may take some
// (SCM_RIGHTS, up to 253 a message, all of which must be received to be
// closed safely: see handoff_linux.go) and their close: one such read at
// a time. The broker's descriptors are shared by every sandbox's proxy and
// every call, and a sandbox's own are capped by its RLIMIT_NOFILE (1024 by
// default); a sandbox sending 253 copies of a socket on each of its 64
// connections made the broker hold 16,000 at once (the closes made slow
// by a socket whose FIN waits), enough for two sandboxes to take a broker
// whose limit is 20,000 to EMFILE, where every other sandbox's proxy
// fails to dial and calls fail to start.
type rightsBudget chan struct{}

// acquire waits for the budget until deadline (none when zero) or ctx
// ends, and returns the func that gives it back.
func (b rightsBudget) acquire(ctx context.Context, deadline time.Time) (release func(), err error) {
	var expired <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		expired = t.C
	}
	select {
	case b <- struct{}{}:
		var once sync.Once
		return func() { once.Do(func() { <-b }) }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-expired:
		return nil, os.ErrDeadlineExceeded
	}
}

// Serve accepts connections on l until ctx is done or l fails, handling each
// in its own goroutine. After an accept error that is temporary (see
// forward.TemporaryAcceptError: out of descriptors, say) it pauses and
// accepts again. Cancelling ctx (the sandbox has ended) closes l and
// both ends of every open connection, the client's and the upstream's, so no
// relay outlives it whatever the upstream does. Serve returns once every
// connection it accepted has ended; it returns nil when ctx was cancelled,
// and the accept error otherwise.
func (p *Proxy) Serve(ctx context.Context, l net.Listener) error {
	stop := context.AfterFunc(ctx, func() { l.Close() })
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	var backoff time.Duration
	for {
		c, err := l.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if forward.TemporaryAcceptError(err) {
				backoff = forward.NextBackoff(backoff)
				p.o.Logger.Warn("egress accept", "sandbox", p.o.Sandbox, "err", err, "backoff", backoff)
				select {
				case <-time.After(backoff):
				case <-ctx.Done():
				}
				continue
			}
			return fmt.Errorf("accepting on %s: %w", l.Addr(), err)
		}
		backoff = 0
		if !p.slot(ctx) {
			discard(c)
			p.decide(Decision{Reason: fmt.Sprintf("connection cap of %d reached", p.o.MaxConns)})
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-p.sem }()
			p.handle(ctx, c)
		}()
	}
}

// slot takes one of the MaxConns places for a connection just accepted.
// At the cap it waits for one, up to HandshakeTimeout or the end of ctx,
// and reports false if none came: a connection that closed may not have
// given its place back yet (its goroutine runs late on a loaded machine,
// after a burst of connections that just closed, say), and a connection
// refused then is closed with its request unread, a reset for the client.
// The accept loop waits meanwhile, so the broker holds at most one waiting
// connection per proxy; the rest wait in the socket's queue.
func (p *Proxy) slot(ctx context.Context) bool {
	select {
	case p.sem <- struct{}{}:
		return true
	default:
	}
	t := time.NewTimer(p.o.HandshakeTimeout)
	defer t.Stop()
	select {
	case p.sem <- struct{}{}:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

// handshakeReader caps the bytes read while the handshake lasts.
type handshakeReader struct {
	r io.Reader
	n int // bytes still allowed
}

var errHandshakeTooLarge = errors.New("handshake too large")

func (h *handshakeReader) Read(b []byte) (int, error) {
	if h.n <= 0 {
		return 0, errHandshakeTooLarge
	}
	if len(b) > h.n {
		b = b[:h.n]
	}
	n, err := h.r.Read(b)
	h.n -= n
	return n, err
}

// errBadHandoff is a descriptor, or several, sent on the proxy's socket that
// is not what the forwarder hands over (see firstBytes).
var errBadHandoff = errors.New("bad connection handoff")

// handshakeBuf is the size of the buffer the handshake is read through.
const handshakeBuf = 4096

// handle runs one client connection: handshake, checks, then the tunnel.
func (p *Proxy) handle(ctx context.Context, c net.Conn) {
	defer c.Close()
	defer func() {
		// A bug reached by one sandbox's bytes must not take the broker down.
		if r := recover(); r != nil {
			p.o.Logger.Error("egress connection panicked", "sandbox", p.o.Sandbox, "panic", fmt.Sprint(r))
		}
	}()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()

	deadline := time.Now().Add(p.o.HandshakeTimeout)
	c.SetDeadline(deadline)
	client, first, handed, err := firstBytes(ctx, c, min(handshakeBuf, p.o.MaxHandshakeBytes), p.rights, deadline)
	if err != nil {
		if errors.Is(err, errBadHandoff) {
			p.decide(Decision{Reason: "refused: " + err.Error()})
		}
		return
	}
	if handed {
		// The forwarder handed the sandbox client's connection over; the
		// Unix connection has done its job (firstBytes closed it).
		p.o.Logger.Debug("egress connection handed over", "sandbox", p.o.Sandbox, "spliced", !needsBuffer(client))
	}
	p.handshake(ctx, client, first)
}

// handshake reads the request on c (first holds the bytes already read from
// it) and runs it; it closes c when the sandbox ends and when it returns.
func (p *Proxy) handshake(ctx context.Context, c net.Conn, first []byte) {
	defer c.Close()
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	c.SetDeadline(time.Now().Add(p.o.HandshakeTimeout))
	var r io.Reader = c
	if len(first) > 0 {
		r = io.MultiReader(bytes.NewReader(first), c)
	}
	hr := &handshakeReader{r: r, n: p.o.MaxHandshakeBytes}
	br := bufio.NewReaderSize(hr, handshakeBuf)
	b0, err := br.Peek(1)
	if err != nil {
		return
	}
	switch b0[0] {
	case socksVersion:
		p.socks5(ctx, c, br, hr)
	case 0x04:
		// SOCKS4 is not spoken; close without a reply, on the record.
		p.decide(Decision{Proto: "socks4", Reason: "SOCKS4 is not spoken; use SOCKS5"})
	default:
		p.httpProxy(ctx, c, br, hr)
	}
}

// closeOnEnd closes up when ctx ends, as handle closes the client's end:
// when a sandbox is gone both sides of each of its connections close at once,
// whatever the upstream does (one that stalls would otherwise hold a relay,
// and the broker waiting on it, until the idle timeout). Call the returned
// func once up is no longer used.
func closeOnEnd(ctx context.Context, up net.Conn) (stop func() bool) {
	return context.AfterFunc(ctx, func() { up.Close() })
}

// tunnel finishes a successful CONNECT (either protocol): on port 443 it
// checks the ClientHello's SNI, then forwards the bytes the client already
// sent and relays both ways. d is the allow decision, reported here (or
// turned into a denial if the SNI check fails).
func (p *Proxy) tunnel(c, up net.Conn, br *bufio.Reader, hr *handshakeReader, t target, d Decision) {
	defer up.Close()
	if t.port == 443 && !p.o.NoSNICheck {
		hr.n = maxHelloBytes + 5*maxHelloRecords
		c.SetReadDeadline(time.Now().Add(p.o.HandshakeTimeout))
		raw, sni, err := readClientHello(br)
		if err == nil && raw != nil {
			err = checkServerName(sni, t, "")
		}
		if err != nil {
			d.Allowed, d.Reason = false, "refused after connect: "+err.Error()
			p.decide(d)
			return
		}
		if len(raw) > 0 {
			if _, err := up.Write(raw); err != nil {
				d.Allowed, d.Reason = false, "writing ClientHello upstream failed"
				p.decide(d)
				return
			}
			if err := p.checkRetries(c, up, br, hr, t); err != nil {
				d.Allowed, d.Reason = false, "refused after connect: "+err.Error()
				p.decide(d)
				return
			}
		} else if startsHTTPRequest(br) {
			// Plain HTTP on port 443: a front that takes TLS and HTTP on
			// one port routes it by its Host header, as on port 80.
			p.tunnelHTTP(c, up, br, hr, t, d)
			return
		} else if !t.ip.IsValid() {
			// Neither TLS nor HTTP (an SSL 2.0 compatible ClientHello,
			// which has no server name, or any other bytes): a front
			// that routes by the server name finds none and sends the
			// stream to its default site, which may be another than t's.
			d.Allowed, d.Reason = false, "refused after connect: a tunnel to a name on port 443 carries a TLS ClientHello naming it or an HTTP request, and this one began with neither"
			p.decide(d)
			return
		}
	}
	if t.port == 80 {
		p.tunnelHTTP(c, up, br, hr, t, d)
		return
	}
	p.decide(d)
	c.SetDeadline(time.Time{})
	if n := br.Buffered(); n > 0 {
		early, _ := br.Peek(n)
		if _, err := up.Write(early); err != nil {
			return
		}
	}
	p.relay(c, up)
}

// tunnelHTTP finishes a tunnel to port 80, which carries plain HTTP: a
// server that serves many names (a CDN's front) takes the site from each
// request's Host header, which a relay of the bytes would not check, so a
// tunnel to a granted name could reach any site behind the same front. The
// tunnel carries one HTTP/1.x request, forwarded as an absolute-form one is:
// its Host set to the checked name, hop-by-hop headers dropped, the
// connection closed after the response. Anything else is refused before a
// byte goes upstream.
func (p *Proxy) tunnelHTTP(c, up net.Conn, br *bufio.Reader, hr *handshakeReader, t target, d Decision) {
	hr.n = p.o.MaxHandshakeBytes
	c.SetReadDeadline(time.Now().Add(p.o.HandshakeTimeout))
	req, err := http.ReadRequest(br)
	switch {
	case err != nil:
		what := "HTTP requests"
		if t.port == 443 {
			what = "TLS or HTTP requests"
		}
		d.Allowed, d.Reason = false, fmt.Sprintf("refused after connect: a tunnel to port %d carries %s only, and this one did not start with one", t.port, what)
	case req.ProtoMajor != 1 || req.Method == http.MethodConnect:
		d.Allowed, d.Reason = false, fmt.Sprintf("refused after connect: a tunnel to port %d carries HTTP/1.x requests only, not %s %s", t.port, loggable(req.Method), loggable(req.Proto))
	}
	if !d.Allowed {
		p.decide(d)
		return
	}
	p.decide(d)
	p.forwardHTTP(c, up, req, hr, t)
}

// checkRetries checks the ClientHello a client sends again when the server
// answers its first with a HelloRetryRequest (TLS 1.3): that one is in the
// clear too, may name another host, and a server that serves many names (a
// CDN's front) may take the name from it, so a tunnel whose first
// ClientHello named the checked host would otherwise reach another site.
// It copies the server's first records to the client until it knows
// whether they hold a retry, and if so reads the client's answer, checks it
// as the first, and sends it upstream; a second retry is refused. The
// server's reply may take as long as a tunnel may idle.
func (p *Proxy) checkRetries(c, up net.Conn, br *bufio.Reader, hr *handshakeReader, t target) error {
	for retries := 0; ; retries++ {
		up.SetReadDeadline(time.Now().Add(p.o.IdleTimeout))
		c.SetWriteDeadline(time.Now().Add(p.o.IdleTimeout))
		retry, err := relayServerHello(up, c)
		up.SetReadDeadline(time.Time{})
		c.SetWriteDeadline(time.Time{})
		switch {
		case err != nil:
			return err
		case !retry:
			return nil
		case retries == maxHelloRetries:
			return errors.New("the server sent a second HelloRetryRequest")
		}
		hr.n = retryHelloBytes
		c.SetReadDeadline(time.Now().Add(p.o.HandshakeTimeout))
		raw, sni, err := readRetryHello(br, up)
		if err == nil {
			err = checkServerName(sni, t, " after a HelloRetryRequest")
		}
		if err != nil {
			return err
		}
		if _, err := up.Write(raw); err != nil {
			return nil // the relay finds the upstream gone
		}
	}
}

// maxMethodLen is how many bytes startsHTTPRequest reads for a method.
const maxMethodLen = 24

// httpWhiteSpace is every byte a server may read as white space in a
// request line: RFC 9112 §3 lets it take HTAB, VT, FF and a bare CR for the
// space between method and target (HAProxy takes a tab), and some servers
// skip any of them, or blank lines, before a request line.
const httpWhiteSpace = " \t\v\f\r\n"

// startsHTTPRequest reports whether the client's first bytes may start an
// HTTP request: a method (a token) and white space, HTTP/2's cleartext
// preface ("PRI * HTTP/2.0") included; white space, which some servers skip
// before a request line; or a token that goes on past maxMethodLen bytes,
// or stops there (EOF, or its handshake deadline passes), since it may yet
// be one. tunnelHTTP reads (and refuses) what is not. Only bytes that no
// request can start with, a byte neither token nor white space before the
// first white space, leave the tunnel opaque. It peeks, consuming nothing.
func startsHTTPRequest(br *bufio.Reader) bool {
	for i := 0; i < maxMethodLen; i++ {
		b, err := br.Peek(i + 1)
		if err != nil {
			return true
		}
		switch c := b[i]; {
		case strings.IndexByte(httpWhiteSpace, c) >= 0:
			// Blank lines or spaces before a request line, which some
			// servers skip, or the end of a method, whatever white space
			// the server takes for the separator.
			return true
		case !isTokenChar(c):
			return false
		}
	}
	return true
}

// isTokenChar reports whether c may appear in an HTTP token (RFC 9110 §5.6.2).
func isTokenChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// checkServerName reports why the server name sni of a ClientHello (""
// for none; when says which one) does not name target t as a front that
// routes TLS by it without terminating it reads it (HAProxy's
// req.ssl_sni, sniproxy): such a front compares the bytes with the names
// it serves and sends any other, or none, to its default site, which may
// be another than t's. So a tunnel to an IP literal takes no server name
// at all, and one to a name takes exactly that name as RFC 6066 writes
// it: ASCII, without a trailing dot, letters in either case. A name that
// only normalises to it (a trailing dot, a fullwidth letter or a soft
// hyphen, which IDNA mapping removes) is refused, and so is none.
func checkServerName(sni string, t target, when string) error {
	switch {
	case t.ip.IsValid() && sni == "":
		return nil
	case t.ip.IsValid():
		return fmt.Errorf("TLS server name %q of the ClientHello%s on a tunnel to an address", loggable(sni), when)
	case sni == "":
		return fmt.Errorf("the ClientHello%s names no server: a tunnel to a name must name it, or a front would take it to its default site", when)
	case !sameASCIIName(sni, t.host):
		return fmt.Errorf("TLS server name %q of the ClientHello%s differs from the requested host", loggable(sni), when)
	}
	return nil
}

// sameASCIIName reports whether sni is the normalised name host, letters
// in either case: ASCII alone is folded, never Unicode (which takes the
// Kelvin sign for k).
func sameASCIIName(sni, host string) bool {
	if len(sni) != len(host) {
		return false
	}
	for i := 0; i < len(sni); i++ {
		c := sni[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != host[i] {
			return false
		}
	}
	return true
}
