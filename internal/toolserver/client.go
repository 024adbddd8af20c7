package toolserver

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coder/websocket"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/tool"
	"github.com/airlockhq/airlock/wire"
)

// Options configure a remote backend. New copies them.
type Options struct {
	// Endpoint is where the hands are: "stdio:CMD ARG..." spawns CMD (split
	// on spaces, no quoting) and speaks over its stdin and stdout;
	// "ws://HOST:PORT/PATH" or "wss://..." dials a tool-server's --listen.
	Endpoint string
	// Token is the bearer token of a WebSocket endpoint.
	Token string
	// TLS configures a wss:// endpoint (RootCAs for a private CA); nil
	// means the system's roots.
	TLS *tls.Config
	// Local runs the calls that carry a secret (an http_fetch with a
	// granted header): credentials never go to the hands. Nil refuses them.
	Local sandbox.Backend
	// Heartbeat is the broker's heartbeat interval (default
	// DefaultHeartbeat); hands silent for DeadAfter of the longer of both
	// intervals are taken for dead, and the broker reconnects.
	Heartbeat time.Duration
	// MaxBackoff caps the wait between reconnect attempts (default 5s).
	MaxBackoff time.Duration
	// Stderr receives a stdio endpoint's stderr; nil discards it.
	Stderr io.Writer
	// ConnectTimeout bounds one connection attempt, dial and handshake
	// (default 10s, and 2m for a kube:// endpoint, whose first connection
	// waits for a pod), plus DeadAfter heartbeats.
	ConnectTimeout time.Duration
	// Kube is a kube:// endpoint's request (kubereq.Request.Encode): the
	// airlock-kube helper is spawned with it for each connection, with one
	// session id (kubereq.NewSession, unless the request names one) for
	// all of them, and once more to release the session on Close.
	Kube string
	// Getenv reads the environment a kube:// helper may inherit
	// ($KUBECONFIG, $HOME, in-cluster variables); nil means os.Getenv.
	Getenv func(string) string
	// Dial, when set, replaces the endpoint's dialer.
	Dial func(ctx context.Context) (Conn, error)
	// Release, when set, ends the hands' session: Close runs it once the
	// last connection has ended, and New when the first connection fails.
	// A lost connection and the reconnect never run it. A kube:// endpoint
	// without one runs "airlock-kube release" (its session's Secret and
	// workspace claim outlive each connection, not the Backend).
	Release func(ctx context.Context) error
	// AnswerGrace is how long past a call's wall time the hands have to
	// answer it (default 30s): their sandbox is killed at the wall time,
	// and building and tearing it down take a while. A call with a wall
	// time the hands leave unanswered past it is given up, as lost.
	AnswerGrace time.Duration
	// Logger receives operational logs; nil discards.
	Logger *slog.Logger
}

// Backend runs every sandbox on remote hands (a tool-server) over one
// persistent connection, and reconnects when the connection or the hands
// die. It implements sandbox.Backend; it is safe for concurrent use.
//
// Across a lost connection, a call in flight that only reads (read_file,
// glob, grep: tool.Hints Idempotent and ReadOnly) is sent once more on
// the next connection, under the same id, so hands that ran it answer from
// their record; any other call in flight ends with sandbox.ErrLost and is
// never sent again. A call made while the connection is down waits for the
// next one, within its own context.
type Backend struct {
	opts     Options
	logger   *slog.Logger
	endpoint string // for records: the endpoint without a token or command arguments

	mu      sync.Mutex
	link    *link // the live connection; nil while reconnecting
	pending map[string]*pending
	report  sandbox.Report
	closed  bool
	closing chan struct{}
	done    chan struct{} // closed when the reconnect loop has ended
}

// New connects to the hands once, so a wrong endpoint or token is an
// error now, and then keeps the connection up until Close.
func New(ctx context.Context, opts *Options) (*Backend, error) {
	if opts == nil || opts.Endpoint == "" && opts.Dial == nil {
		return nil, errors.New("toolserver: Options need an Endpoint")
	}
	o := *opts
	if o.Heartbeat <= 0 {
		o.Heartbeat = DefaultHeartbeat
	}
	if o.Heartbeat > MaxHeartbeat {
		return nil, fmt.Errorf("toolserver: a heartbeat interval of %s is longer than the most accepted, %s", o.Heartbeat, MaxHeartbeat)
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 5 * time.Second
	}
	if o.AnswerGrace <= 0 {
		o.AnswerGrace = 30 * time.Second
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 10 * time.Second
		if strings.HasPrefix(o.Endpoint, "kube://") {
			o.ConnectTimeout = 2 * time.Minute
		}
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	b := &Backend{
		opts: o, logger: logger, endpoint: DescribeEndpoint(o.Endpoint),
		pending: map[string]*pending{},
		closing: make(chan struct{}), done: make(chan struct{}),
	}
	if o.Dial == nil {
		d, release, err := dialer(&o)
		if err != nil {
			return nil, err
		}
		b.opts.Dial = d
		if b.opts.Release == nil {
			b.opts.Release = release
		}
	}
	l, err := b.connect(ctx)
	if err != nil {
		err = fmt.Errorf("reaching the tool-server at %s: %w", b.endpoint, err)
		if rerr := b.releaseSession(); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return nil, err
	}
	b.install(l)
	go b.maintain()
	return b, nil
}

// DescribeEndpoint names an endpoint for records and messages: a stdio
// command by its program, a URL without user info or query.
func DescribeEndpoint(ep string) string {
	if cmd, ok := strings.CutPrefix(ep, "stdio:"); ok {
		f := strings.Fields(cmd)
		if len(f) > 0 {
			return "stdio:" + f[0]
		}
		return "stdio:"
	}
	if i := strings.IndexAny(ep, "?#"); i >= 0 {
		ep = ep[:i]
	}
	// The user info ends at the authority's last "@" (a password may hold
	// more), as URL parsers take it; the authority ends at the first "/".
	if j := strings.Index(ep, "://"); j >= 0 {
		auth, path := ep[j+3:], ""
		if k := strings.Index(auth, "/"); k >= 0 {
			auth, path = auth[:k], auth[k:]
		}
		if i := strings.LastIndex(auth, "@"); i >= 0 {
			ep = ep[:j+3] + auth[i+1:] + path
		}
	}
	return ep
}

// dialer returns the dial function of o.Endpoint, and what ends its
// session (nil when a connection is all there is).
func dialer(o *Options) (func(ctx context.Context) (Conn, error), func(ctx context.Context) error, error) {
	ep := o.Endpoint
	switch {
	case strings.HasPrefix(ep, "stdio:"):
		args := strings.Fields(strings.TrimPrefix(ep, "stdio:"))
		if len(args) == 0 {
			return nil, nil, fmt.Errorf("remote %q: stdio: needs a command", ep)
		}
		return func(ctx context.Context) (Conn, error) { return spawn(args, nil, o.Stderr, 2*time.Second, nil) }, nil, nil
	case strings.HasPrefix(ep, "kube://"):
		return kubeDialer(o)
	case strings.HasPrefix(ep, "ws://"), strings.HasPrefix(ep, "wss://"):
		if o.Token == "" {
			return nil, nil, fmt.Errorf("remote %s: a WebSocket tool-server needs its bearer token", DescribeEndpoint(ep))
		}
		u, err := url.Parse(ep)
		if err != nil {
			// url's error quotes the whole endpoint, user info included.
			return nil, nil, fmt.Errorf("remote %s: not a URL", DescribeEndpoint(ep))
		}
		if u.User != nil {
			return nil, nil, fmt.Errorf("remote %s: user info (user:password@) in the endpoint is not accepted: the tool-server takes only its bearer token (--remote-token-file)", DescribeEndpoint(ep))
		}
		if u.Scheme == "ws" && !loopbackHost(u.Hostname()) {
			return nil, nil, fmt.Errorf("remote %s: plain ws:// would send the token in clear; only to a loopback address: use wss://", DescribeEndpoint(ep))
		}
		token, tc := o.Token, o.TLS
		return func(ctx context.Context) (Conn, error) { return DialWebSocket(ctx, ep, token, tc) }, nil, nil
	}
	return nil, nil, fmt.Errorf("remote %q: want stdio:CMD..., ws://HOST:PORT, wss://HOST:PORT or kube://NAMESPACE/TEMPLATE", DescribeEndpoint(ep))
}

// DialWebSocket connects to a tool-server's --listen at url (ws:// or
// wss://), presenting token; tc configures wss:// (nil: the system's
// roots). It makes no loopback check: a caller dialing plain ws:// past
// loopback must have its own reason (Options.Dial for hands it created).
func DialWebSocket(ctx context.Context, url, token string, tc *tls.Config) (Conn, error) {
	hdr := http.Header{"Authorization": {"Bearer " + token}}
	client := &http.Client{
		Transport: &http.Transport{TLSClientConfig: tc, Proxy: nil},
		// The token goes to the endpoint given, over its scheme, and
		// nowhere else: a redirect (which Go's client follows with the
		// Authorization header to the same host, https:// to http://
		// included) is refused, never followed.
		CheckRedirect: func(req *http.Request, _ []*http.Request) error {
			return fmt.Errorf("the tool-server answered with a redirect to %s://%s; airlock follows none: give the endpoint it serves at", req.URL.Scheme, req.URL.Host)
		},
	}
	c, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{HTTPHeader: hdr, HTTPClient: client})
	if err != nil {
		if resp != nil && resp.StatusCode == http.StatusUnauthorized {
			return nil, errors.New("the tool-server refused the token (401)")
		}
		return nil, err
	}
	return newWSConn(c), nil
}

// loopbackHost reports whether host is localhost or a loopback address.
func loopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// spawn starts a stdio tool-server. It gets no environment of the
// broker's: a fixed PATH and locale, and extra.
//
// prelude, if not nil, writes to its stdin before the frames (the kube
// helper's session key). Close waits grace for it to exit after its stdin
// closes, then kills it.
func spawn(args, extra []string, stderr io.Writer, grace time.Duration, prelude func(io.Writer) error) (Conn, error) {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin", "LANG=C.UTF-8"}, extra...)
	cmd.Stderr = stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", args[0], err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	if prelude != nil {
		if err := prelude(in); err != nil {
			in.Close()
			_ = cmd.Process.Kill()
			<-exited
			return nil, fmt.Errorf("writing to %s: %w", args[0], err)
		}
	}
	return StreamConn(out, in, closerFunc(func() error {
		in.Close()
		select {
		case <-exited:
		case <-time.After(grace):
			_ = cmd.Process.Kill()
			<-exited
		}
		return nil
	})), nil
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// link is one connection to the hands.
type link struct {
	conn     Conn
	identity string
	report   sandbox.Report
	iv       time.Duration // the heartbeat timeout's base: the longer interval
	since    time.Time     // when the welcome arrived
	dead     chan struct{}
	once     sync.Once
	alive    chan struct{}
	// writing counts the writes in progress; beating is set while a
	// heartbeat is being written.
	writing atomic.Int64
	beating atomic.Bool
	// decoding is set while the reader decodes a frame (a large one takes
	// a while): the peer's next frames wait unread meanwhile, and their
	// absence is not silence.
	decoding atomic.Bool
}

func (l *link) kill() {
	l.once.Do(func() {
		close(l.dead)
		l.conn.Close()
	})
}

func (l *link) send(ctx context.Context, f *Frame) error {
	b, err := EncodeFrame(f)
	if err != nil {
		return err
	}
	return l.write(ctx, b)
}

// write sends one payload; a failed write ends the link. A write waits as
// long as the link lives (a large frame on a slow link takes what it
// takes): the heartbeats in the other direction decide when it is dead.
func (l *link) write(ctx context.Context, b []byte) error {
	l.writing.Add(1)
	defer l.writing.Add(-1)
	if err := l.conn.Send(ctx, b); err != nil {
		l.kill()
		return err
	}
	return nil
}

// connect dials the hands and negotiates the version.
func (b *Backend) connect(ctx context.Context) (*link, error) {
	ctx, cancel := context.WithTimeout(ctx, b.opts.ConnectTimeout+DeadAfter*b.opts.Heartbeat)
	defer cancel()
	c, err := b.opts.Dial(ctx)
	if err != nil {
		return nil, err
	}
	l := &link{conn: c, dead: make(chan struct{}), alive: make(chan struct{}, 1)}
	stop := context.AfterFunc(ctx, func() { c.Close() })
	defer stop()
	if err := l.send(ctx, &Frame{Type: TypeControl, Control: &Control{Op: OpHello, Versions: []int{Version}, HeartbeatMS: b.opts.Heartbeat.Milliseconds()}}); err != nil {
		return nil, fmt.Errorf("saying hello: %w", err)
	}
	p, err := c.Recv(ctx)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("waiting for the welcome: %w", err)
	}
	f, err := DecodeFrame(p)
	if err == nil && f.Type == TypeControl && f.Control.Op == OpError {
		err = errors.New("the tool-server refused the connection: " + f.Control.Message)
	} else if err == nil && (f.Type != TypeControl || f.Control.Op != OpWelcome) {
		err = fmt.Errorf("the tool-server's first frame is a %s, not a welcome", f.Type)
	} else if err == nil && f.Control.Version != Version {
		err = fmt.Errorf("the tool-server chose protocol version %d; this broker speaks %d", f.Control.Version, Version)
	} else if err == nil && f.Control.HeartbeatMS > MaxHeartbeat.Milliseconds() {
		err = fmt.Errorf("the tool-server's heartbeat interval of %d ms is too long: the most this broker accepts is %s", f.Control.HeartbeatMS, MaxHeartbeat)
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	l.identity = f.Control.Identity
	if f.Control.Report != nil {
		l.report = *f.Control.Report
	}
	l.iv = max(b.opts.Heartbeat, time.Duration(f.Control.HeartbeatMS)*time.Millisecond)
	l.since = time.Now()
	return l, nil
}

// install makes l the live connection: its reader and heartbeat start, and
// every call waiting for a connection is sent on it.
func (b *Backend) install(l *link) {
	Alive(l.conn, func() {
		select {
		case l.alive <- struct{}{}:
		default:
		}
	})
	go b.read(l)
	go b.heartbeat(l)
	b.mu.Lock()
	b.link = l
	b.report = l.report
	var send []*pending
	for _, p := range b.pending {
		if p.link == nil {
			p.link = l
			send = append(send, p)
		}
	}
	b.mu.Unlock()
	b.logger.Info("connected to the hands", "endpoint", b.endpoint, "hands", l.identity)
	for _, p := range send {
		b.sendCall(p, l)
	}
}

// maintain waits for the live connection to die, settles its calls and
// reconnects, with backoff and jitter, until Close.
//
// The backoff starts again from its first step only after a link that
// lived: one that died within DeadAfter heartbeats of its welcome counts
// as one more failed attempt, so hands that welcome and drop every
// connection (a pod killed as it starts) are not reconnected to, a new pod
// or process each time, every few tens of milliseconds.
func (b *Backend) maintain() {
	defer close(b.done)
	attempt := 0
	for {
		b.mu.Lock()
		l := b.link
		b.mu.Unlock()
		select {
		case <-l.dead:
		case <-b.closing:
			l.kill()
			b.settle(l)
			return
		}
		b.settle(l)
		b.logger.Warn("lost the hands; reconnecting", "endpoint", b.endpoint, "hands", l.identity)
		if time.Since(l.since) >= DeadAfter*l.iv {
			attempt = 0
		}
		for ; ; attempt++ {
			d := min(b.opts.MaxBackoff, 50*time.Millisecond<<min(attempt, 10))
			d = d/2 + rand.N(d/2+1)
			select {
			case <-time.After(d):
			case <-b.closing:
				return
			}
			nl, err := b.connect(context.Background())
			if err != nil {
				b.logger.Info("reconnecting to the hands", "endpoint", b.endpoint, "attempt", attempt+1, "err", err)
				continue
			}
			b.install(nl)
			attempt++
			break
		}
	}
}

// settle ends or re-queues the calls in flight on a dead link l.
func (b *Backend) settle(l *link) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.link == l {
		b.link = nil
	}
	for id, p := range b.pending {
		if p.link != l {
			continue
		}
		if p.retry && !p.retried && !b.closed {
			p.retried = true
			p.link = nil // sent again on the next connection
			continue
		}
		delete(b.pending, id)
		p.lost = true
		p.hands = l.identity
		close(p.done)
	}
}

// read delivers the frames of l until it dies.
func (b *Backend) read(l *link) {
	defer l.kill()
	for {
		p, err := l.conn.Recv(context.Background())
		if err != nil {
			return
		}
		l.decoding.Store(true)
		f, err := DecodeFrame(p)
		l.decoding.Store(false)
		if err != nil {
			b.logger.Error("the hands sent a bad frame; dropping the connection", "err", err)
			return
		}
		switch f.Type {
		case TypeHeartbeat:
		case TypeResult:
			b.mu.Lock()
			c := b.pending[f.ID]
			if c != nil && c.link == l {
				if err := c.check(f.Result); err != nil {
					b.mu.Unlock()
					b.logger.Error("the hands broke a call's bounds; dropping the connection", "call", f.ID, "err", err)
					return
				}
				delete(b.pending, f.ID)
			} else {
				c = nil // a result that arrived twice, or for a call given up
			}
			b.mu.Unlock()
			if c != nil {
				c.res, c.hands = f.Result, l.identity
				close(c.done)
			}
		case TypeOutput:
			b.mu.Lock()
			c := b.pending[f.ID]
			b.mu.Unlock()
			if c != nil && c.sink != nil {
				if err := c.sink.put(f.Output); err != nil {
					b.logger.Error("the hands broke a command's output bounds; dropping the connection", "call", f.ID, "err", err)
					return
				}
			}
		case TypeControl:
			if f.Control.Op == OpError {
				b.logger.Error("the hands ended the connection", "reason", f.Control.Message)
				return
			}
		default:
			b.logger.Error("the hands sent a frame only a broker sends; dropping the connection", "type", f.Type)
			return
		}
	}
}

// heartbeat sends heartbeats on l and kills it when the hands fall silent.
func (b *Backend) heartbeat(l *link) {
	t := time.NewTicker(b.opts.Heartbeat)
	defer t.Stop()
	last := time.Now()
	var seq int64
	for {
		select {
		case <-l.dead:
			return
		case <-l.alive:
			last = time.Now()
		case <-t.C:
			if l.decoding.Load() {
				last = time.Now()
			}
			if time.Since(last) > DeadAfter*l.iv {
				b.logger.Warn("the hands stopped answering heartbeats", "hands", l.identity)
				l.kill()
				return
			}
			// While a frame is being written the hands see its bytes
			// arrive, which is as good as a heartbeat; a heartbeat is
			// written from a goroutine, so a write that blocks never
			// stops this loop from noticing silence.
			if l.writing.Load() > 0 || !l.beating.CompareAndSwap(false, true) {
				continue
			}
			seq++
			go func(seq int64) {
				defer l.beating.Store(false)
				_ = l.send(context.Background(), &Frame{Type: TypeHeartbeat, Heartbeat: &Heartbeat{Seq: seq}})
			}(seq)
		}
	}
}

// pending is one call between Run and its result.
type pending struct {
	id    string
	frame []byte
	retry bool // sent again once if its connection dies
	// Under Backend.mu:
	link    *link // where it was sent; nil while waiting for a connection
	retried bool
	stopped bool
	// Set before done is closed:
	done chan struct{}
	res  *Result
	lost bool
	// unsent: the backend was closed before the call was ever sent.
	unsent bool
	hands  string
	sent   chan struct{} // closed once the call frame went out
	sentO  sync.Once
	sink   *outputSink
	// maxStdout is a tool call's cap on the runner's stdout (the call's
	// Spec.Limits.OutputBytes); 0: none.
	maxStdout int64
}

// check says why r is an answer to p the hands must not give: more of a
// tool call's stdout than its cap lets a sandbox write (honest hands cut
// it there, as a local sandbox is cut), or more egress decisions than
// hands report of one call. The broker holds what the hands send to
// the bounds it would hold a local sandbox to, and no more reaches the
// model or the audit log.
func (p *pending) check(r *Result) error {
	if p.maxStdout > 0 && int64(len(r.Stdout)) > p.maxStdout {
		return fmt.Errorf("the tool call's output is %d bytes, past its cap of %d", len(r.Stdout), p.maxStdout)
	}
	if len(r.Egress) > maxDecisions {
		return fmt.Errorf("the call reports %d egress decisions, more than the %d hands report of one call", len(r.Egress), maxDecisions)
	}
	// A command's output chunks go before its result on the one ordered
	// connection, so every chunk the result counts has arrived: hands
	// counting more would hold the call waiting for chunks never to come.
	if p.sink != nil && r.Chunks > p.sink.received() {
		return fmt.Errorf("the command's result counts %d output chunks, and %d came before it", r.Chunks, p.sink.received())
	}
	return nil
}

func (b *Backend) sendCall(p *pending, l *link) {
	ctx := context.Background()
	if err := l.write(ctx, p.frame); err != nil {
		return // the link is dead: settle decides the call's fate
	}
	p.sentO.Do(func() { close(p.sent) })
	b.mu.Lock()
	stopped := p.stopped
	b.mu.Unlock()
	if stopped {
		_ = l.send(ctx, &Frame{Type: TypeControl, ID: p.id, Control: &Control{Op: OpStop}})
	}
}

// control sends a call-level control to the hands running p, if any,
// once p's call frame is out (a control ahead of its call would be
// ignored).
func (b *Backend) control(p *pending, c *Control) {
	b.mu.Lock()
	l := p.link
	if c.Op == OpStop {
		p.stopped = true
	}
	b.mu.Unlock()
	if l == nil {
		return
	}
	select {
	case <-p.sent:
	case <-l.dead:
		return
	}
	_ = l.send(context.Background(), &Frame{Type: TypeControl, ID: p.id, Control: c})
}

// Run runs spec on the hands; a tool call that carries a secret runs on
// the Local backend instead. See Backend for what happens across a lost
// connection.
func (b *Backend) Run(ctx context.Context, spec *sandbox.Spec) (*sandbox.Result, error) {
	if spec.TTY {
		return nil, errors.New("a terminal is not available on remote hands: give the command a stdin that is not a terminal (a pipe, a file, < /dev/null)")
	}
	call := &Call{
		Command: spec.Command, Cwd: spec.Cwd,
		Mounts: spec.Mounts, Masks: spec.Masks, ReadOnly: spec.ReadOnly, ReadOnlyDirs: spec.ReadOnlyDirs,
		Network: spec.Network.ProxySocket != "",
		Limits: Limits{
			WallMS: spec.Limits.Wall.Milliseconds(), MemoryBytes: spec.Limits.MemoryBytes, Pids: spec.Limits.Pids,
			OutputBytes: spec.Limits.OutputBytes, FileBytes: spec.Limits.FileBytes, TmpBytes: spec.Limits.TmpBytes,
			OpenFiles: spec.Limits.OpenFiles, AllowUnenforced: spec.Limits.AllowUnenforced,
		},
	}
	if call.Network {
		call.Hosts, call.Private = spec.Network.Hosts, spec.Network.Private
	}
	id := ""
	retry := false
	if len(spec.Command) == 0 {
		var raw []byte
		if spec.Stdin != nil {
			var err error
			if raw, err = io.ReadAll(spec.Stdin); err != nil {
				return nil, fmt.Errorf("reading the tool input: %w", err)
			}
		}
		payload, err := wire.ReadFrame(bytes.NewReader(raw))
		var in wire.ToolInput
		if err == nil {
			err = wire.DecodeStrict(payload, &in)
		}
		if err != nil {
			return nil, fmt.Errorf("reading the tool input: %w", err)
		}
		if len(in.Context.Secrets) > 0 {
			// Credentials stay on the broker's side.
			if b.opts.Local == nil {
				return nil, errors.New("this call carries a secret, which never goes to remote hands, and no local sandbox is configured for it")
			}
			local := *spec
			local.Stdin = bytes.NewReader(raw)
			return b.opts.Local.Run(ctx, &local)
		}
		call.Input = &in
		id = in.Context.CallID
		if def, ok := tool.Lookup(in.Tool); ok {
			// Only a call that changes nothing, here or elsewhere, may run
			// twice: read_file, glob, grep.
			retry = def.Hints.ReadOnly && def.Hints.Idempotent && !def.Hints.OpenWorld
		}
	} else {
		call.Stdin = spec.Stdin != nil
	}
	if id == "" {
		id = "rmt_" + randomHex(8)
	}
	frame, err := EncodeFrame(&Frame{Type: TypeCall, ID: id, Call: call})
	if err != nil {
		return nil, err
	}
	p := &pending{id: id, frame: frame, retry: retry, done: make(chan struct{}), sent: make(chan struct{})}
	if len(spec.Command) == 0 {
		p.maxStdout = spec.Limits.OutputBytes
	}
	// abandonOutput has the sink stop waiting on a reader that does not
	// read once the call is over (killed on request, cancelled, or ended
	// for its time limit and sandbox.OutputGrace): its write blocked on a
	// full pipe held Run, and airlock exec, for ever.
	abandon := make(chan struct{})
	var abandonOnce sync.Once
	abandonOutput := func() { abandonOnce.Do(func() { close(abandon) }) }
	if len(spec.Command) > 0 {
		stdout, stderr := spec.Stdout, spec.Stderr
		if stdout != nil {
			stdout = sandbox.Abandonable(stdout, abandon)
		}
		if stderr != nil {
			stderr = sandbox.Abandonable(stderr, abandon)
		}
		p.sink = newOutputSink(stdout, stderr, spec.Limits.OutputBytes)
		// A stream whose reader went away (airlock exec --remote -- yes |
		// head -1) is closed on the hands too, so the command meets the
		// broken pipe as it would locally, instead of running on, its
		// output dropped, until a limit ended it.
		p.sink.broken = func(stream int) { go b.control(p, &Control{Op: OpClose, Stream: stream}) }
		defer p.sink.close()
		defer context.AfterFunc(ctx, abandonOutput)()
	}

	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, errors.New("the remote backend is closed")
	}
	if _, dup := b.pending[id]; dup {
		b.mu.Unlock()
		return nil, fmt.Errorf("call %s is already in flight", id)
	}
	b.pending[id] = p
	l := b.link
	if l != nil {
		p.link = l
	}
	b.mu.Unlock()
	if l != nil {
		go b.sendCall(p, l)
	}

	if len(spec.Command) > 0 {
		runDone := make(chan struct{})
		defer close(runDone)
		go func() {
			for {
				select {
				case <-spec.Stop:
					b.control(p, &Control{Op: OpStop})
					spec.Stop = nil
				case sig, ok := <-spec.Signal:
					if !ok {
						spec.Signal = nil
						continue
					}
					b.control(p, &Control{Op: OpSignal, Signal: int(sig)})
					if sig == syscall.SIGKILL {
						abandonOutput()
					}
				case <-runDone:
					return
				}
			}
		}()
		if spec.Stdin != nil {
			go b.pumpStdin(p, spec.Stdin, runDone)
		}
	}

	// The hands kill the call's sandbox at its wall time (theirs, or the
	// broker's, whichever is shorter) and answer: hands that let it pass,
	// and AnswerGrace more, without a word are not waited for, whatever
	// the caller's context, as a local sandbox ends at its wall time.
	// The time runs from when the call has a connection to go out on (a
	// call frame the hands do not take counts against them): now, or once
	// it is sent on the next one.
	var clock *time.Timer
	defer func() {
		if clock != nil {
			clock.Stop()
		}
	}()
	var expired <-chan time.Time
	startClock := func() {
		if spec.Limits.Wall > 0 && clock == nil {
			clock = time.NewTimer(spec.Limits.Wall + b.opts.AnswerGrace)
			expired = clock.C
		}
	}
	if l != nil {
		startClock()
	}
	sentCh := p.sent
wait:
	for {
		select {
		case <-p.done:
			break wait
		case <-ctx.Done():
			b.abandon(p)
			return nil, fmt.Errorf("remote call %s: %w", id, ctx.Err())
		case <-sentCh:
			sentCh = nil
			startClock()
		case <-expired:
			b.abandon(p)
			select {
			case <-p.done: // answered as it was cancelled
				break wait
			default:
			}
			b.logger.Warn("the hands did not answer a call past its wall time", "call", id, "wall", spec.Limits.Wall, "endpoint", b.endpoint)
			return nil, fmt.Errorf("%w: hands at %s, call %s: no answer %s past the call's wall time of %s", sandbox.ErrLost, b.endpoint, id, b.opts.AnswerGrace, spec.Limits.Wall)
		}
	}
	where := b.endpoint + " " + p.hands
	if p.unsent {
		return nil, fmt.Errorf("remote call %s: the remote backend was closed before the call reached the hands", id)
	}
	if p.lost {
		return nil, fmt.Errorf("%w: hands %s at %s, call %s", sandbox.ErrLost, p.hands, b.endpoint, id)
	}
	r := p.res
	if r.Missing != nil {
		return nil, r.Missing
	}
	if r.Error != "" {
		return nil, fmt.Errorf("the hands at %s did not run the call: %s", b.endpoint, r.Error)
	}
	if f := spec.Network.OnDecision; f != nil {
		for _, d := range r.Egress {
			f(d)
		}
	}
	if p.sink != nil {
		if r.Limit == sandbox.LimitTime {
			t := time.AfterFunc(sandbox.OutputGrace, abandonOutput)
			defer t.Stop()
		}
		p.sink.wait(r.Chunks, ctx)
	} else {
		if spec.Stdout != nil {
			_, _ = spec.Stdout.Write(r.Stdout)
		}
		if spec.Stderr != nil {
			_, _ = spec.Stderr.Write(r.Stderr)
		}
	}
	return &sandbox.Result{
		ExitCode: r.ExitCode, Signal: r.Signal, Limit: r.Limit, LimitsHit: r.LimitsHit,
		OutputTruncated: r.OutputTruncated, Isolation: r.Isolation,
		Setup: time.Duration(r.SetupUS) * time.Microsecond, Duration: time.Duration(r.DurationUS) * time.Microsecond,
		CPU: time.Duration(r.CPUUS) * time.Microsecond, PeakMemory: r.PeakMemory,
		Remote: where,
	}, nil
}

// abandon gives up on p after its caller's context ended: the hands are
// told to kill its sandbox, and Run waits (a bounded time) for them to
// confirm, so the sandbox is gone when Run returns.
func (b *Backend) abandon(p *pending) {
	b.mu.Lock()
	l := p.link
	if l == nil {
		delete(b.pending, p.id) // never sent
		b.mu.Unlock()
		return
	}
	b.mu.Unlock()
	// The cancel is written from a goroutine: hands that read nothing
	// (their heartbeats still come) would hold its write, and the caller,
	// for as long as the link lives.
	cancelled := make(chan struct{})
	go func() {
		defer close(cancelled)
		b.control(p, &Control{Op: OpCancel})
	}()
	t := time.NewTimer(DeadAfter * l.iv)
	defer t.Stop()
	select {
	case <-p.done:
	case <-l.dead:
	case <-t.C:
		select {
		case <-cancelled:
		default:
			// Neither the call nor its cancel went out in DeadAfter
			// heartbeats: the hands take no frames, and the link, of
			// no use to any call, is dropped.
			b.logger.Warn("the hands take no frames; dropping the connection", "call", p.id, "hands", l.identity)
			l.kill()
		}
	}
	b.mu.Lock()
	if b.pending[p.id] == p {
		delete(b.pending, p.id)
	}
	b.mu.Unlock()
}

// pumpStdin sends a command's stdin once its call is out.
func (b *Backend) pumpStdin(p *pending, r io.Reader, done <-chan struct{}) {
	select {
	case <-p.sent:
	case <-done:
		return
	}
	b.mu.Lock()
	l := p.link
	b.mu.Unlock()
	if l == nil {
		return
	}
	buf := make([]byte, 32<<10)
	var seq int64
	for {
		n, err := r.Read(buf)
		ch := &Chunk{Seq: seq, Data: bytes.Clone(buf[:n]), EOF: err != nil}
		if n > 0 || err != nil {
			seq++
			if serr := l.send(context.Background(), &Frame{Type: TypeInput, ID: p.id, Input: ch}); serr != nil {
				return
			}
		}
		if err != nil {
			return
		}
		select {
		case <-done:
			return
		case <-l.dead:
			return
		default:
		}
	}
}

// Report is the hands' report: their backend and its features, and a
// "remote" feature naming the endpoint and the hands.
func (b *Backend) Report() sandbox.Report {
	b.mu.Lock()
	defer b.mu.Unlock()
	r := b.report
	r.Features = append([]sandbox.Feature{{Name: "remote", Available: true, Detail: b.endpoint}}, r.Features...)
	return r
}

// Close ends the connection, and then the hands' session (Options.Release);
// calls in flight end as lost.
func (b *Backend) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		<-b.done
		return nil
	}
	b.closed = true
	close(b.closing)
	b.mu.Unlock()
	<-b.done
	// The calls still waiting for a connection will never have one: a
	// call sent before (a read to be sent again) is lost with its link,
	// one never sent ends as never run.
	b.mu.Lock()
	for id, p := range b.pending {
		delete(b.pending, id)
		p.lost, p.unsent = p.retried, !p.retried
		close(p.done)
	}
	b.mu.Unlock()
	err := b.releaseSession()
	if c, ok := b.opts.Local.(io.Closer); ok {
		err = errors.Join(err, c.Close())
	}
	return err
}

// releaseTimeout bounds Options.Release.
const releaseTimeout = time.Minute

// releaseSession runs Options.Release, once.
func (b *Backend) releaseSession() error {
	if b.opts.Release == nil {
		return nil
	}
	release := b.opts.Release
	b.opts.Release = nil
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	if err := release(ctx); err != nil {
		b.logger.Warn("ending the hands' session", "endpoint", b.endpoint, "err", err)
		return fmt.Errorf("ending the session of the hands at %s: %w", b.endpoint, err)
	}
	return nil
}

// outputSink writes a command's output chunks to its streams in sequence,
// from a goroutine of its own so a slow reader never holds up the
// connection. What waits here is bounded by the broker itself, not left to
// the hands: each stream at most the call's output cap (the hands cap each
// stream at it, or less), and the chunks that arrived ahead of their turn
// at most maxAhead of them and maxAheadBytes. Hands past a bound get an
// error from put, and the broker drops their connection.
type outputSink struct {
	mu      sync.Mutex
	cond    *sync.Cond
	next    int64
	pending map[int64]*Chunk
	ahead   int64 // bytes in pending
	got     [3]int64
	max     int64 // each stream's cap; 0: none known
	ready   []*Chunk
	written int64
	closed  bool
	w       [3]io.Writer
	done    chan struct{}
	// broken, when set, is called once for each stream a write to which
	// failed (its reader went away); the stream's output is dropped from
	// then on.
	broken func(stream int)
}

// Bounds of the output chunks a sink holds ahead of their turn, besides
// their count (maxAhead).
const (
	maxAheadBytes = wire.MaxFrameSize
	// outputSlack is how far past the call's output cap a stream may go
	// before the hands are taken to ignore the cap.
	outputSlack = 64 << 10
)

func newOutputSink(stdout, stderr io.Writer, max int64) *outputSink {
	s := &outputSink{pending: map[int64]*Chunk{}, max: max, w: [3]io.Writer{nil, stdout, stderr}, done: make(chan struct{})}
	s.cond = sync.NewCond(&s.mu)
	go s.loop()
	return s
}

// received is the number of chunks taken in sequence so far.
func (s *outputSink) received() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.next
}

// put takes a chunk, or says why the hands sent one they must not.
func (s *outputSink) put(c *Chunk) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.Seq < s.next || s.pending[c.Seq] != nil {
		return nil // a duplicate
	}
	if c.Seq-s.next >= maxAhead {
		return fmt.Errorf("output chunk %d arrived while chunk %d is the next, more than %d ahead", c.Seq, s.next, maxAhead)
	}
	s.got[c.Stream] += int64(len(c.Data))
	if s.max > 0 && s.got[c.Stream] > s.max+outputSlack {
		return fmt.Errorf("stream %d passed the call's output cap of %d bytes", c.Stream, s.max)
	}
	if c.Seq != s.next {
		if s.ahead+int64(len(c.Data)) > maxAheadBytes {
			return fmt.Errorf("output chunks ahead of chunk %d hold more than %d bytes", s.next, maxAheadBytes)
		}
		s.ahead += int64(len(c.Data))
	}
	s.pending[c.Seq] = c
	for {
		n, ok := s.pending[s.next]
		if !ok {
			break
		}
		if n != c {
			s.ahead -= int64(len(n.Data))
		}
		delete(s.pending, s.next)
		s.next++
		s.ready = append(s.ready, n)
	}
	s.cond.Broadcast()
	return nil
}

func (s *outputSink) loop() {
	defer close(s.done)
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		for len(s.ready) == 0 && !s.closed {
			s.cond.Wait()
		}
		if len(s.ready) == 0 {
			return
		}
		c := s.ready[0]
		s.ready = s.ready[1:]
		s.mu.Unlock()
		if w := s.w[c.Stream]; w != nil {
			if _, err := w.Write(c.Data); err != nil && !errors.Is(err, sandbox.ErrAbandoned) {
				s.mu.Lock()
				if s.w[c.Stream] != nil {
					s.w[c.Stream] = nil
					if s.broken != nil {
						s.broken(c.Stream)
					}
				}
				s.mu.Unlock()
			}
		}
		s.mu.Lock()
		s.written++
		s.cond.Broadcast()
	}
}

// wait returns once n chunks are written, or ctx ends.
func (s *outputSink) wait(n int64, ctx context.Context) {
	stop := context.AfterFunc(ctx, func() {
		s.mu.Lock()
		s.closed = true
		s.cond.Broadcast()
		s.mu.Unlock()
	})
	defer stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.written < n && !s.closed {
		s.cond.Wait()
	}
}

func (s *outputSink) close() {
	s.mu.Lock()
	s.closed = true
	s.cond.Broadcast()
	s.mu.Unlock()
	<-s.done
}
