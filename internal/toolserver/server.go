package toolserver

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/coder/websocket"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/connlimit"
	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/tool"
	"github.com/airlockhq/airlock/wire"
)

// DefaultHeartbeat is the heartbeat interval of both ends when none is set.
// A peer silent for DeadAfter of the longer of both intervals is taken for
// dead. Neither end accepts an interval past MaxHeartbeat, its own or the
// peer's: the longer one decides how long the sandboxes of a half-open
// connection live on.
const (
	DefaultHeartbeat = time.Second
	DeadAfter        = 3
	MaxHeartbeat     = 30 * time.Second
)

// DefaultMaxSandboxes is how many sandboxes a tool-server runs at once when
// ServerOptions.MaxSandboxes is zero: a broker process runs at most 8 calls
// and 16 background works at once, and a reconnecting one may briefly have
// its old connection's sandboxes still being torn down.
const DefaultMaxSandboxes = 32

// ServerOptions configure a tool-server. NewServer copies them.
type ServerOptions struct {
	// Grant caps whatever any broker asks: every mount, path, cwd and limit
	// of a call must fit in it. Required.
	Grant *grant.Grant
	// Backend runs each call in a fresh sandbox (the native backend).
	// Required.
	Backend sandbox.Backend
	// Name names these hands in the brokers' audit records (default: the
	// host name). Each process adds an instance id of its own.
	Name string
	// Heartbeat is the interval of the server's heartbeats (default
	// DefaultHeartbeat).
	Heartbeat time.Duration
	// MaxSandboxes is how many sandboxes the server runs at once, for all
	// its connections together (default DefaultMaxSandboxes); a call past
	// it is refused at once with a sentence naming the cap.
	MaxSandboxes int
	// HandshakeTimeout bounds the wait for a WebSocket broker's hello
	// after its upgrade (default HeaderTimeout): the heartbeat that ends a
	// silent connection starts only once the handshake is done.
	HandshakeTimeout time.Duration
	// OutputGrace is how long past a command's wall time the broker has to
	// take its output, and how long, besides a second for every MiB of
	// it, it has to take any frame (default 60s): a broker that keeps its
	// connection alive and reads nothing is taken for dead then, and its
	// connection ends, so neither a command's sandbox, held up writing
	// output nobody takes, nor the frames waiting for it are kept.
	OutputGrace time.Duration
	// Egress configures the egress proxy of calls that reach the network.
	Egress *broker.EgressOptions
	// Logger receives operational logs; nil discards.
	Logger *slog.Logger
}

// Server is the hands' end: it serves connections from brokers and runs
// each of their calls in a sandbox of its own. It is safe for concurrent
// use; each connection is independent, but a call id run once is answered
// from the record of that run on any connection.
type Server struct {
	opts     ServerOptions
	identity string
	logger   *slog.Logger
	cache    *resultCache
	commands *commandIDs
	running  atomic.Int64
	runs     atomic.Int64
	// slots holds one token per call admitted to run, up to MaxSandboxes.
	slots chan struct{}
	// folding remembers the mount sources grant.FoldingError found fine:
	// a broker's masks and protected paths in a tree the hands' own grant
	// masks nothing in are checked at the first call that brings them.
	// A refusal is not kept (it may have been a passing error), and at
	// most maxFoldingKept sources are.
	foldingMu sync.Mutex
	folding   map[string]bool
}

// inTree reports whether path p is dir or lies below it.
func inTree(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// maxCommandIDs is how many command ids a Server remembers (commandIDs).
const maxCommandIDs = 16384

// maxFoldingKept is the most mount sources Server.folding keeps.
const maxFoldingKept = 1024

// foldingError is grant.FoldingError of the mount source src, checked once
// while it is fine.
func (s *Server) foldingError(src string) error {
	s.foldingMu.Lock()
	fine := s.folding[src]
	s.foldingMu.Unlock()
	if fine {
		return nil
	}
	if err := grant.FoldingError(src); err != nil {
		return err
	}
	s.foldingMu.Lock()
	defer s.foldingMu.Unlock()
	if s.folding == nil {
		s.folding = map[string]bool{}
	}
	if len(s.folding) < maxFoldingKept {
		s.folding[src] = true
	}
	return nil
}

// Running is the number of sandboxes running now.
func (s *Server) Running() int { return int(s.running.Load()) }

// Runs is the number of sandboxes started since the server started.
func (s *Server) Runs() int { return int(s.runs.Load()) }

// NewServer returns a tool-server.
func NewServer(opts *ServerOptions) (*Server, error) {
	if opts == nil || opts.Grant == nil || opts.Backend == nil {
		return nil, errors.New("toolserver: ServerOptions need Grant and Backend")
	}
	o := *opts
	if o.Heartbeat <= 0 {
		o.Heartbeat = DefaultHeartbeat
	}
	if o.Heartbeat > MaxHeartbeat {
		return nil, fmt.Errorf("toolserver: a heartbeat interval of %s is longer than the most accepted, %s", o.Heartbeat, MaxHeartbeat)
	}
	if o.MaxSandboxes <= 0 {
		o.MaxSandboxes = DefaultMaxSandboxes
	}
	if o.HandshakeTimeout <= 0 {
		o.HandshakeTimeout = HeaderTimeout
	}
	if o.OutputGrace <= 0 {
		o.OutputGrace = time.Minute
	}
	if o.Name == "" {
		o.Name, _ = os.Hostname()
		if o.Name == "" {
			o.Name = "hands"
		}
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Server{
		opts:     o,
		identity: o.Name + "/" + randomHex(6),
		logger:   logger,
		cache:    newResultCache(1024, 64<<20),
		commands: newCommandIDs(maxCommandIDs),
		slots:    make(chan struct{}, o.MaxSandboxes),
	}, nil
}

// Identity is the hands' name and this process's instance id.
func (s *Server) Identity() string { return s.identity }

// Handler serves the protocol over WebSocket at any path. Every request
// must carry "Authorization: Bearer TOKEN"; anything else is refused with
// 401 before the upgrade, and its connection is closed after the answer.
// A request with the token marks its connection authenticated for a
// connlimit.Listener.
func (s *Server) Handler(token string) http.Handler {
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := []byte(r.Header.Get("Authorization"))
		if token == "" || subtle.ConstantTimeCompare(got, want) != 1 {
			s.logger.Warn("refused a connection without the right token", "remote", r.RemoteAddr)
			w.Header().Set("Connection", "close")
			http.Error(w, "a bearer token is required", http.StatusUnauthorized)
			return
		}
		connlimit.Authenticated(r.Context())
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			s.logger.Warn("websocket upgrade", "remote", r.RemoteAddr, "err", err)
			return
		}
		conn := newWSConn(c)
		defer conn.Close()
		if err := s.serveConn(r.Context(), conn, s.opts.HandshakeTimeout); err != nil {
			s.logger.Info("connection ended", "remote", r.RemoteAddr, "err", err)
		}
	})
}

// Settings of the HTTP server HTTPServer builds, and the connection cap of
// `airlock tool-server --listen`.
const (
	// HeaderTimeout bounds the wait for a request's headers, the first
	// request's included: a connection that says nothing is closed.
	HeaderTimeout = 10 * time.Second
	// IdleTimeout closes a kept-alive connection this long after its last
	// answer. A broker's connection is a WebSocket from its first request
	// on and never idles as HTTP; nothing else has reason to keep one.
	IdleTimeout = 30 * time.Second
	// DefaultMaxConnections caps the connections open at once.
	DefaultMaxConnections = 128
	// MaxHeaderBytes caps a request's header block: a broker's upgrade
	// sends a few hundred bytes, and net/http's default (1 MiB) let every
	// connection without the token hold that much for HeaderTimeout.
	MaxHeaderBytes = 64 << 10
)

// HTTPServer returns the http.Server that serves Handler(token), to serve
// on a connlimit.Listener: a connection without the token is closed after
// its 401, one that sends no request within HeaderTimeout or none after
// its answer within IdleTimeout is closed, and the listener can tell the
// connections that have shown the token (ConnContext). It has no read or
// write timeout for a whole request: a broker's connection lasts as long as
// its session.
func (s *Server) HTTPServer(token string) *http.Server {
	// HTTP/1.1 only: a broker's connection is a WebSocket, HTTP/1.1's, and
	// an HTTP/2 connection carries many requests at once, past what the
	// connection cap bounds.
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	return &http.Server{
		Protocols:         &protocols,
		Handler:           s.Handler(token),
		MaxHeaderBytes:    MaxHeaderBytes,
		ReadHeaderTimeout: HeaderTimeout,
		IdleTimeout:       IdleTimeout,
		ConnContext:       connlimit.ConnContext,
		ErrorLog:          slog.NewLogLogger(s.logger.Handler(), slog.LevelWarn),
	}
}

// ServeConn serves one broker's connection until it ends or ctx is
// cancelled. When it ends, every call of the connection still running is
// killed (its sandbox, background work included): a sandbox outlives
// neither its call nor its broker.
//
// ServeConn waits for the broker's hello as long as it takes (a stdio
// peer, a pod's attached stdin, may come late); Handler bounds the wait.
func (s *Server) ServeConn(ctx context.Context, c Conn) error {
	return s.serveConn(ctx, c, 0)
}

// serveConn is ServeConn; a connection whose hello has not arrived within
// handshake (when not zero) is closed.
func (s *Server) serveConn(ctx context.Context, c Conn, handshake time.Duration) error {
	ctx, cancel := context.WithCancel(ctx)
	sc := &serverConn{s: s, c: c, calls: map[string]*running{}}
	// The connection's end kills its calls at once: cancel before waiting
	// for them, never after (the heartbeat would otherwise be what finds
	// the broker gone, up to a heartbeat interval later).
	defer sc.wg.Wait()
	defer c.Close()
	defer cancel()
	if handshake > 0 {
		// A token holder that says nothing is ended as a silent broker
		// is, not held for ever before its heartbeat starts.
		t := time.AfterFunc(handshake, func() { c.Close() })
		err := sc.handshake(ctx)
		if !t.Stop() && err == nil {
			err = fmt.Errorf("no hello within %s", handshake)
		}
		if err != nil {
			return err
		}
	} else if err := sc.handshake(ctx); err != nil {
		return err
	}
	alive := make(chan struct{}, 1)
	Alive(c, func() {
		select {
		case alive <- struct{}{}:
		default:
		}
	})
	go sc.heartbeat(ctx, alive, cancel)
	for {
		p, err := c.Recv(ctx)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("reading from the broker: %w", err)
		}
		sc.decoding.Store(true)
		f, err := DecodeFrame(p)
		sc.decoding.Store(false)
		if err != nil {
			sc.send(ctx, &Frame{Type: TypeControl, Control: &Control{Op: OpError, Message: err.Error()}})
			return err
		}
		switch f.Type {
		case TypeHeartbeat:
		case TypeCall:
			sc.start(ctx, f.ID, f.Call, p)
		case TypeInput:
			sc.input(f.ID, f.Input)
		case TypeControl:
			sc.control(f.ID, f.Control)
		default:
			err := fmt.Errorf("a broker sends no %s frames", f.Type)
			sc.send(ctx, &Frame{Type: TypeControl, Control: &Control{Op: OpError, Message: err.Error()}})
			return err
		}
	}
}

// serverConn is one broker's connection.
type serverConn struct {
	s  *Server
	c  Conn
	wg sync.WaitGroup
	mu sync.Mutex
	// calls are the calls of this connection running now, by id.
	calls map[string]*running
	// iv is the heartbeat timeout's base: the longer of both intervals.
	iv time.Duration
	// writing counts writes in progress; beating is set while a heartbeat
	// is being written.
	writing atomic.Int64
	beating atomic.Bool
	// decoding is set while the reader decodes a frame: the broker's next
	// frames wait unread meanwhile, and their absence is not silence.
	decoding atomic.Bool
}

// running is one call on the hands.
type running struct {
	cancel context.CancelFunc
	stop   chan struct{}
	stopMu sync.Once
	signal chan syscall.Signal
	stdin  *inputQueue
	// closed marks the command's streams (1, 2) whose reader on the
	// broker's side went away (OpClose): their writes fail with EPIPE, so
	// the command meets the broken pipe as it would locally.
	closed [3]atomic.Bool
}

func (sc *serverConn) send(ctx context.Context, f *Frame) error {
	b, err := EncodeFrame(f)
	if err != nil {
		return err
	}
	sc.writing.Add(1)
	defer sc.writing.Add(-1)
	// A broker reads whatever comes (its reader never waits on a call): a
	// frame still not written OutputGrace, and a second for every
	// minWriteRate bytes of it, after it was begun is to a broker that
	// keeps its connection alive and reads nothing, and the connection
	// ends. Its frames, results up to wire.MaxFrameSize each, waited for
	// ever, however many calls it made.
	t := time.AfterFunc(sc.s.opts.OutputGrace+time.Duration(len(b)/minWriteRate)*time.Second, func() {
		sc.s.logger.Warn("the broker has not taken a frame in its time; ending its connection", "type", f.Type, "call", f.ID, "bytes", len(b))
		sc.c.Close()
	})
	defer t.Stop()
	return sc.c.Send(ctx, b)
}

// minWriteRate is the slowest rate, in bytes a second, at which the hands
// wait for a broker to take a frame (OutputGrace besides).
const minWriteRate = 1 << 20

func (sc *serverConn) handshake(ctx context.Context) error {
	p, err := sc.c.Recv(ctx)
	if err != nil {
		return fmt.Errorf("reading the broker's hello: %w", err)
	}
	f, err := DecodeFrame(p)
	if err == nil && (f.Type != TypeControl || f.Control.Op != OpHello) {
		err = errors.New("the first frame must be a hello")
	}
	if err == nil && !slices.Contains(f.Control.Versions, Version) {
		err = fmt.Errorf("no protocol version in common: the broker speaks %v, these hands speak %d", f.Control.Versions, Version)
	}
	if err == nil && f.Control.HeartbeatMS > MaxHeartbeat.Milliseconds() {
		err = fmt.Errorf("the broker's heartbeat interval of %d ms is too long: the most these hands accept is %s", f.Control.HeartbeatMS, MaxHeartbeat)
	}
	if err != nil {
		sc.send(ctx, &Frame{Type: TypeControl, Control: &Control{Op: OpError, Message: err.Error()}})
		return err
	}
	sc.iv = max(sc.s.opts.Heartbeat, time.Duration(f.Control.HeartbeatMS)*time.Millisecond)
	rep := sc.s.opts.Backend.Report()
	return sc.send(ctx, &Frame{Type: TypeControl, Control: &Control{
		Op: OpWelcome, Version: Version, Identity: sc.s.identity, Report: &rep,
		HeartbeatMS: sc.s.opts.Heartbeat.Milliseconds(),
	}})
}

// heartbeat sends a heartbeat every interval and ends the connection when
// the broker has been silent for DeadAfter intervals.
func (sc *serverConn) heartbeat(ctx context.Context, alive <-chan struct{}, dead context.CancelFunc) {
	iv := sc.s.opts.Heartbeat
	t := time.NewTicker(iv)
	defer t.Stop()
	var seq int64
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-alive:
			last = time.Now()
		case <-t.C:
			if sc.decoding.Load() {
				last = time.Now()
			}
			if time.Since(last) > DeadAfter*sc.iv {
				sc.s.logger.Warn("the broker stopped answering; ending its connection and its calls")
				dead()
				sc.c.Close()
				return
			}
			// A frame being written is as good as a heartbeat; one that
			// blocks never stops this loop from noticing silence.
			if sc.writing.Load() > 0 || !sc.beating.CompareAndSwap(false, true) {
				continue
			}
			seq++
			go func(seq int64) {
				defer sc.beating.Store(false)
				if err := sc.send(ctx, &Frame{Type: TypeHeartbeat, Heartbeat: &Heartbeat{Seq: seq}}); err != nil {
					dead()
					sc.c.Close()
				}
			}(seq)
		}
	}
}

// start runs a call, or answers it from the record of its first run.
func (sc *serverConn) start(ctx context.Context, id string, call *Call, raw []byte) {
	sum := sha256.Sum256(raw)
	sc.mu.Lock()
	if _, dup := sc.calls[id]; dup {
		// The same call twice on one connection (a duplicated frame): the
		// run in progress answers it.
		sc.mu.Unlock()
		return
	}
	if call.Input == nil && !sc.s.commands.add(id) {
		// A command asked again after it ran (a replayed frame, on this
		// connection or another): it may have taken effect, and a command
		// never runs twice.
		sc.mu.Unlock()
		sc.s.logger.Warn("refused a command asked again under an id it already ran under", "call", id)
		sc.wg.Add(1)
		go func() {
			defer sc.wg.Done()
			_ = sc.send(ctx, &Frame{Type: TypeResult, ID: id, Result: &Result{Error: "call id " + id + " already ran on these hands; a command never runs twice"}})
		}()
		return
	}
	r := &running{stop: make(chan struct{}), signal: make(chan syscall.Signal, 4)}
	if call.Stdin {
		r.stdin = newInputQueue(maxQueuedInput)
	}
	cctx, cancel := context.WithCancel(ctx)
	r.cancel = cancel
	sc.calls[id] = r
	sc.wg.Add(1)
	sc.mu.Unlock()
	go func() {
		defer sc.wg.Done()
		defer func() {
			sc.mu.Lock()
			delete(sc.calls, id)
			sc.mu.Unlock()
			cancel()
		}()
		var res *Result
		if call.Input != nil {
			// Tool calls are recorded: a second ask of the same id gets
			// the first answer, never a second run.
			var refused *Result
			res = sc.s.cache.do(cctx, id, sum, func() (*Result, bool) {
				if !sc.s.admit() {
					// Not an answer to keep: asked again, it may run.
					refused = sc.s.busy(id)
					return refused, false
				}
				defer sc.s.leave()
				res := sc.s.run(cctx, id, call, r, nil)
				// A run cut short by its connection ending is not an
				// answer: a retry on a new connection runs it again.
				return res, ctx.Err() == nil
			})
			if res == nil {
				res = refused
			}
		} else if !sc.s.admit() {
			res = sc.s.busy(id)
		} else {
			res = sc.s.run(cctx, id, call, r, func(by context.Context, stream int, seq int64, p []byte) error {
				// A broker alive and not reading (its heartbeats come) would
				// hold the send, and the sandbox writing, for ever: past
				// the command's wall time it is taken for dead.
				stop := context.AfterFunc(by, func() {
					sc.s.logger.Warn("the broker has not taken a command's output by its wall time; ending its connection", "call", id)
					sc.c.Close()
				})
				defer stop()
				return sc.send(ctx, &Frame{Type: TypeOutput, ID: id, Output: &Chunk{Seq: seq, Stream: stream, Data: p}})
			})
			sc.s.leave()
		}
		if res == nil {
			return // the connection ended
		}
		err := sc.send(ctx, &Frame{Type: TypeResult, ID: id, Result: res})
		if errors.Is(err, wire.ErrFrameTooLarge) {
			// An answer the link cannot carry is still an answer: without
			// one the broker's call would wait for ever.
			sc.s.logger.Warn("a call's result does not fit a frame", "call", id, "err", err)
			err = sc.send(ctx, &Frame{Type: TypeResult, ID: id, Result: &Result{Error: fmt.Sprintf("the call's result is larger than the %d bytes a frame of the link carries", wire.MaxFrameSize)}})
		}
		if err != nil {
			sc.s.logger.Info("result not delivered; the broker will ask again or call it lost", "call", id, "err", err)
		}
	}()
}

func (sc *serverConn) input(id string, ch *Chunk) {
	sc.mu.Lock()
	r := sc.calls[id]
	sc.mu.Unlock()
	if r == nil || r.stdin == nil {
		return
	}
	if !r.stdin.put(ch) {
		sc.s.logger.Warn("a command's stdin outran it past the queue, or arrived too far out of order; killing it", "call", id)
		r.cancel()
	}
}

func (sc *serverConn) control(id string, c *Control) {
	sc.mu.Lock()
	r := sc.calls[id]
	sc.mu.Unlock()
	if r == nil {
		return
	}
	switch c.Op {
	case OpCancel:
		r.cancel()
	case OpStop:
		r.stopMu.Do(func() { close(r.stop) })
	case OpSignal:
		select {
		case r.signal <- syscall.Signal(c.Signal):
		default:
		}
	case OpClose:
		if c.Stream == 1 || c.Stream == 2 {
			r.closed[c.Stream].Store(true)
		}
	}
}

// admit takes one of the server's sandbox slots, or reports false when
// every one is taken; leave gives it back.
func (s *Server) admit() bool {
	select {
	case s.slots <- struct{}{}:
		return true
	default:
		return false
	}
}

func (s *Server) leave() { <-s.slots }

// busy is the answer to a call refused because every slot is taken.
func (s *Server) busy(id string) *Result {
	s.logger.Warn("refused a call: every sandbox slot is taken", "call", id, "max", cap(s.slots))
	return &Result{Error: fmt.Sprintf("these hands are busy: %d sandboxes are running, the most these hands run at once (airlock tool-server --max-sandboxes); try again when one has ended", cap(s.slots))}
}

// run checks call against the hands' grant and runs it in a fresh sandbox.
// out, for a command, receives its stdout (1) and stderr (2) in order.
func (s *Server) run(ctx context.Context, id string, call *Call, r *running, out func(by context.Context, stream int, seq int64, p []byte) error) *Result {
	spec, in, err := s.specFor(call)
	if err != nil {
		s.logger.Warn("refused a call", "call", id, "err", err)
		return &Result{Error: err.Error()}
	}
	spec.Stop = r.stop
	var stopEgress func()
	if len(call.Command) > 0 {
		spec.Signal = r.signal
	}
	var decisions struct {
		sync.Mutex
		list []egress.Decision
	}
	if call.Network && s.opts.Grant.HasNetwork() {
		var o broker.EgressOptions
		if s.opts.Egress != nil {
			o = *s.opts.Egress
		}
		o.Sandbox = id
		if len(call.Hosts)+len(call.Private) > 0 {
			// The broker's grant narrows the hands': its call reaches no
			// host its own proxy would refuse, as its paths and limits are
			// both grants'.
			rules, err := grant.ParseNetworkRules(call.Hosts, call.Private)
			if err != nil {
				return &Result{Error: "the broker's network rules: " + err.Error()}
			}
			o.Narrow = rules
		}
		next := o.OnDecision
		o.OnDecision = func(d egress.Decision) {
			if next != nil {
				next(d)
			}
			decisions.Lock()
			if len(decisions.list) < maxDecisions {
				decisions.list = append(decisions.list, d)
			}
			decisions.Unlock()
		}
		if o.Logger == nil {
			o.Logger = s.logger
		}
		stop, err := broker.AttachEgress(ctx, s.opts.Grant, spec, &o)
		if err != nil {
			return &Result{Error: "starting the egress proxy: " + err.Error()}
		}
		defer stop()
		stopEgress = stop
		if in != nil && in.Context.Egress != nil {
			plain := s.opts.Grant.PlainHTTPHosts()
			if o.Narrow != nil {
				// http_fetch follows a redirect to plain http only where
				// both grants allow it, as it checks every hop.
				plain = grant.CommonHostPatterns(in.Context.Egress.PlainHTTP, plain)
			}
			in.Context.Egress = &wire.Egress{Proxy: in.Context.Egress.Proxy, PlainHTTP: plain}
		}
	} else if in != nil {
		in.Context.Egress = nil
	}
	var stdout, stderr bytes.Buffer
	var ow *orderedWriters
	if in != nil {
		b, err := marshalInput(in)
		if err != nil {
			return &Result{Error: err.Error()}
		}
		spec.Stdin = bytes.NewReader(b)
		spec.Stdout, spec.Stderr = &stdout, &limited{max: 64 << 10, buf: &stderr}
	} else {
		// The command's output is to be taken by the broker by its wall
		// time, and OutputGrace more.
		by, cancel := context.WithCancel(context.Background())
		defer cancel()
		if spec.Limits.Wall > 0 {
			var stop context.CancelFunc
			by, stop = context.WithTimeout(by, spec.Limits.Wall+s.opts.OutputGrace)
			defer stop()
		}
		ow = &orderedWriters{send: func(stream int, seq int64, p []byte) error { return out(by, stream, seq, p) }, closed: &r.closed}
		spec.Stdout, spec.Stderr = ow.writer(1), ow.writer(2)
		if r.stdin != nil {
			spec.Stdin = r.stdin
			defer r.stdin.close()
		}
	}
	s.running.Add(1)
	s.runs.Add(1)
	res, err := s.opts.Backend.Run(ctx, spec)
	s.running.Add(-1)
	if err != nil {
		out := &Result{Error: err.Error()}
		var mf *sandbox.MissingFeatureError
		if errors.As(err, &mf) {
			out.Missing = s.handsFix(mf, call, spec)
		}
		return out
	}
	if stopEgress != nil {
		stopEgress() // every decision is in before the result goes
	}
	decisions.Lock()
	egressList := decisions.list
	decisions.Unlock()
	var chunks int64
	if ow != nil {
		ow.mu.Lock()
		chunks = ow.seq
		ow.mu.Unlock()
	}
	return &Result{
		Chunks:   chunks,
		Egress:   egressList,
		ExitCode: res.ExitCode, Signal: res.Signal, Limit: res.Limit, LimitsHit: res.LimitsHit,
		OutputTruncated: res.OutputTruncated, Isolation: res.Isolation,
		SetupUS: res.Setup.Microseconds(), DurationUS: res.Duration.Microseconds(),
		CPUUS: res.CPU.Microseconds(), PeakMemory: res.PeakMemory,
		Stdout: stdout.Bytes(), Stderr: stderr.Bytes(),
	}
}

// specFor builds the sandbox Spec of call within the hands' grant: every
// mount, the cwd and a tool call's paths must be allowed by it, the limits
// are the smaller of the broker's and the grant's, the grant's denied and
// protected paths are added to the broker's, and the environment is the
// hands' own (nothing of the broker's).
func (s *Server) specFor(call *Call) (*sandbox.Spec, *wire.ToolInput, error) {
	g := s.opts.Grant
	name := "shell"
	var in *wire.ToolInput
	if call.Input != nil {
		cp := *call.Input
		in = &cp
		name = in.Tool
	}
	def, ok := tool.Lookup(name)
	if !ok {
		return nil, nil, fmt.Errorf("unknown tool %q", name)
	}
	if def.Broker {
		return nil, nil, fmt.Errorf("tool %q runs in the broker, never on the hands", name)
	}
	if !g.ToolEnabled(name) {
		return nil, nil, fmt.Errorf("tool %q is not enabled by the hands' grant", name)
	}
	if !filepath.IsAbs(call.Cwd) {
		return nil, nil, fmt.Errorf("cwd %q is not absolute", call.Cwd)
	}
	gc := grant.Call{Tool: name, Cwd: call.Cwd, Exec: len(call.Command) > 0}
	if in != nil {
		if len(in.Context.Secrets) > 0 {
			return nil, nil, errors.New("a call to the hands carries no secrets")
		}
		args, err := def.Parse(in.Args)
		if err != nil {
			return nil, nil, fmt.Errorf("arguments: %w", err)
		}
		acc := args.Access()
		gc.Exec, gc.Hosts = acc.Exec, acc.Hosts
		for _, p := range acc.Paths {
			gc.Paths = append(gc.Paths, grant.PathUse{Path: p.Path, Write: p.Write})
		}
		if in.Context.Cwd != "" && in.Context.Cwd != call.Cwd {
			return nil, nil, fmt.Errorf("the tool's cwd %q is not the call's %q", in.Context.Cwd, call.Cwd)
		}
		// The sandbox holds only the granted mounts: tools resolve from /.
		in.Context.Root = "/"
	}
	if d := g.Check(gc); !d.Allowed {
		return nil, nil, fmt.Errorf("refused by the hands' grant (%s): %s", d.Rule, d.Reason)
	}
	gl := g.LimitsFor(name)
	spec := broker.SpecFor(g, gl)
	spec.Cwd = call.Cwd
	spec.Command = call.Command
	var mounts []string
	spec.Mounts = nil
	for _, m := range call.Mounts {
		if m.Target != "" && m.Target != m.Source {
			return nil, nil, fmt.Errorf("mount %s: a target other than the source is not accepted", m.Source)
		}
		if d := g.CheckPath(m.Source, m.Writable); !d.Allowed {
			mode := "read-only"
			if m.Writable {
				mode = "read-write"
			}
			return nil, nil, fmt.Errorf("mount %s %s is outside the hands' grant: %s", m.Source, mode, d.Reason)
		}
		spec.Mounts = append(spec.Mounts, sandbox.Mount{Source: m.Source, Writable: m.Writable})
		mounts = append(mounts, m.Source)
	}
	under := func(paths []string) []string {
		var out []string
		for _, p := range paths {
			if slices.ContainsFunc(mounts, func(m string) bool { return inTree(p, m) }) {
				out = append(out, p)
			}
		}
		return out
	}
	spec.Masks = union(call.Masks, under(spec.Masks))
	spec.ReadOnly = union(call.ReadOnly, under(spec.ReadOnly))
	spec.ReadOnlyDirs = union(call.ReadOnlyDirs, under(spec.ReadOnlyDirs))
	// A mask covers one spelling of its name: no tree whose file system
	// may fold case takes any (grant.FoldingError). A file mount holds
	// no name to mask.
	for _, m := range spec.Mounts {
		inside := func(p string) bool { return inTree(p, m.Source) }
		if !m.Writable && !slices.ContainsFunc(spec.Masks, inside) && !slices.ContainsFunc(spec.ReadOnly, inside) {
			continue
		}
		if fi, err := os.Stat(m.Source); err == nil && !fi.IsDir() {
			continue
		}
		if err := s.foldingError(m.Source); err != nil {
			return nil, nil, fmt.Errorf("mount %s: %w", m.Source, err)
		}
	}
	// Every limit is the smaller of the broker's and the hands' grant's, a
	// command's (exec, background work) as a tool call's: a broker narrows
	// what the hands allow, never widens it. A command's output is its own
	// (no runner frame around it), so the hands' cap on it is their grant's
	// output limit itself.
	l := &spec.Limits
	l.Wall = time.Duration(smaller(int64(l.Wall), call.Limits.WallMS*int64(time.Millisecond)))
	if len(call.Command) > 0 {
		l.OutputBytes = gl.Output
	}
	l.OutputBytes = smaller(l.OutputBytes, call.Limits.OutputBytes)
	l.MemoryBytes = smaller(l.MemoryBytes, call.Limits.MemoryBytes)
	l.Pids = int(smaller(int64(l.Pids), int64(call.Limits.Pids)))
	l.FileBytes = smaller(l.FileBytes, call.Limits.FileBytes)
	l.TmpBytes = smaller(l.TmpBytes, call.Limits.TmpBytes)
	l.OpenFiles = int(smaller(int64(l.OpenFiles), int64(call.Limits.OpenFiles)))
	l.AllowUnenforced = l.AllowUnenforced && call.Limits.AllowUnenforced
	if in != nil {
		// A tool call's answer goes back in one result frame, its stdout
		// in base64: the runner's frame is cut to fit it, whatever both
		// grants allow.
		l.OutputBytes = smaller(l.OutputBytes, maxResultStdout)
		tl := &in.Context.Limits
		tl.OutputBytes = smaller(tl.OutputBytes, maxToolOutput)
		tl.OutputBytes = smaller(tl.OutputBytes, gl.Output)
		tl.FileBytes = smaller(tl.FileBytes, gl.FileSize)
		tl.TimeoutMS = smaller(tl.TimeoutMS, gl.Time.Milliseconds())
	}
	return spec, in, nil
}

// handsFix says, when these hands refused a call for limits they cannot
// enforce (they have no cgroup, as in a container or Kubernetes pod), that
// both grants must accept them unenforced for it to run, and which of the
// two did; otherwise it returns mf as it is.
func (s *Server) handsFix(mf *sandbox.MissingFeatureError, call *Call, spec *sandbox.Spec) *sandbox.MissingFeatureError {
	if len(mf.Unenforceable) == 0 || spec.Limits.AllowUnenforced {
		return mf
	}
	yes := map[bool]string{false: "does not", true: "does"}
	out := *mf
	out.Fix = fmt.Sprintf("these hands have no cgroup of their own to enforce each call's memory and process limits, as in a container or a Kubernetes pod: "+
		"to run calls with those limits not enforced (the container's own limits then bound all its calls together), both the broker's grant "+
		"(limits.unenforced = \"allow\"; kube:// hands then get --allow-unenforced-limits) and these hands' own (airlock tool-server --allow-unenforced-limits) "+
		"must accept that: the broker's grant %s, these hands' %s; otherwise: %s",
		yes[call.Limits.AllowUnenforced], yes[s.opts.Grant.AllowsUnenforcedLimits()], mf.Fix)
	return &out
}

// maxResultStdout is the most of a runner's stdout a result frame
// carries: a frame holds wire.MaxFrameSize bytes, the stdout takes a third
// more in base64, and maxResultRest is left for the rest of the result
// (the runner's stderr, the egress decisions). maxToolOutput is the tool
// output cap whose runner frame (wire.SandboxOutputBytes) fits in it.
const (
	maxResultRest   = 2 << 20
	maxResultStdout = (wire.MaxFrameSize - maxResultRest) / 4 * 3
	maxToolOutput   = (maxResultStdout - 64<<10) / 2
)

// maxDecisions bounds the egress decisions one call reports.
const maxDecisions = 1000

// smaller is the smaller of two limits where 0 means "not set".
func smaller(a, b int64) int64 {
	switch {
	case a <= 0:
		return b
	case b <= 0:
		return a
	}
	return min(a, b)
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, p := range b {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

func marshalInput(in *wire.ToolInput) ([]byte, error) {
	var buf bytes.Buffer
	p, err := jsonMarshal(in)
	if err != nil {
		return nil, fmt.Errorf("encoding tool input: %w", err)
	}
	if err := wire.WriteFrame(&buf, p); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// limited keeps the first max bytes written and drops the rest.
type limited struct {
	max int
	buf *bytes.Buffer
}

func (l *limited) Write(p []byte) (int, error) {
	if room := l.max - l.buf.Len(); room > 0 {
		l.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// orderedWriters send a command's two streams as output chunks numbered
// in one sequence, so the broker writes them in the order they came.
type orderedWriters struct {
	mu     sync.Mutex
	seq    int64
	send   func(stream int, seq int64, p []byte) error
	closed *[3]atomic.Bool // streams whose reader went away; nil: none
}

func (o *orderedWriters) writer(stream int) io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		if o.closed != nil && o.closed[stream].Load() {
			return 0, syscall.EPIPE
		}
		o.mu.Lock()
		defer o.mu.Unlock()
		for len(p) > 0 {
			n := min(len(p), 1<<20)
			// A lost link ends the call anyway; the sandbox is not held
			// up by a send that failed.
			_ = o.send(stream, o.seq, bytes.Clone(p[:n]))
			o.seq++
			p = p[n:]
		}
		return len(p), nil
	})
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) {
	n := len(p)
	if _, err := f(p); err != nil {
		return 0, err
	}
	return n, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
