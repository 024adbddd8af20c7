package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// errShutdown refuses work once Shutdown has started.
var errShutdown = errors.New("airlock is shutting down")

// OpenFunc opens the broker session for one MCP session. It is called at
// most once per MCP session, on its first tool call, and may be called
// concurrently for different MCP sessions.
type OpenFunc func(ctx context.Context) (*broker.Session, error)

// DefaultProgressInterval is how often a running call reports progress.
const DefaultProgressInterval = time.Second

// Options configure a Server. New copies them; nil is not allowed because
// Open is required.
type Options struct {
	// Open opens the broker session of one MCP session. Required.
	Open OpenFunc
	// Tools are the tools listed to clients, in order; nil means tool.All().
	// List only the tools the grant enables: a call to any other tool is
	// refused by the broker anyway.
	Tools []*tool.Def
	// Metrics receives call counts and latencies; nil makes a fresh one
	// (see Server.Metrics).
	Metrics *Metrics
	// Version is the implementation version reported to clients.
	Version string
	// ProgressInterval is how often a running call sends a progress
	// notification when the client asked for them; zero means
	// DefaultProgressInterval.
	ProgressInterval time.Duration
	// Logger receives operational logs; nil discards.
	Logger *slog.Logger
	// Grant, when set, is described in the instructions the client gets at
	// initialize (Instructions): the granted paths and their modes, the
	// working directory and the hosts, so the model knows what it may
	// touch. Denied paths and secrets are not mentioned.
	Grant *grant.Grant
}

// Server is airlock's MCP server. One Server serves any number of MCP
// sessions at once; it is safe for concurrent use.
type Server struct {
	opts    Options
	mcp     *mcp.Server
	metrics *Metrics
	logger  *slog.Logger

	mu       sync.Mutex
	sessions map[*mcp.ServerSession]*binding
	draining bool           // Shutdown started: new calls are refused
	closed   bool           // Shutdown is closing sessions: none may open
	calls    sync.WaitGroup // tool calls inside a handler
	inFlight int
	// closing counts the broker sessions release has taken out of
	// sessions but not yet closed: they are still open (their close
	// record is not yet written), so the gauge counts them.
	closing int
	// owed counts the answers not yet written: requests read on Serve's
	// connections and HTTP POSTs to the MCP endpoint being served.
	owed owed
}

// binding ties one MCP session to its broker session.
type binding struct {
	ready chan struct{} // closed once sess or err is set
	sess  *broker.Session
	err   error
}

// New returns a Server offering opts.Tools.
func New(opts *Options) (*Server, error) {
	if opts == nil || opts.Open == nil {
		return nil, errors.New("mcpserver: Options need Open")
	}
	o := *opts
	if o.Tools == nil {
		o.Tools = tool.All()
	}
	if o.ProgressInterval <= 0 {
		o.ProgressInterval = DefaultProgressInterval
	}
	if o.Version == "" {
		o.Version = "devel"
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	m := o.Metrics
	if m == nil {
		m = NewMetrics()
	}
	s := &Server{
		opts:     o,
		metrics:  m,
		logger:   logger,
		sessions: map[*mcp.ServerSession]*binding{},
	}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "airlock", Title: "airlock", Version: o.Version}, &mcp.ServerOptions{
		Instructions: Instructions(o.Grant),
		// No logging capability: airlock does not send log messages.
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
		Logger:       logger,
	})
	for _, d := range o.Tools {
		if err := s.addTool(d); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Instructions is what the MCP server tells a client at initialize: how
// airlock labels and refuses calls, and, for a grant g (nil for none), what
// the calls may touch: the granted paths with their modes, the working
// directory and the hosts. It names nothing the grant hides (denied paths,
// secrets).
func Instructions(g *grant.Grant) string {
	s := "airlock runs each tool call in a fresh, locked-down sandbox limited to a grant. " +
		"Every result starts with an [airlock: ...] label naming the tool, the sandbox and the grant; " +
		"a call outside the grant is refused with the reason."
	if g == nil {
		return s
	}
	s += "\nGranted paths: " + g.PathSummary() + "; anything else is refused (some paths inside them may be hidden or read-only too)." +
		"\nWorking directory (relative paths start here): " + g.WorkDir() + "."
	if h := g.Hosts(); len(h) > 0 {
		s += "\nNetwork: only " + strings.Join(h, ", ") + "."
	} else {
		s += "\nNetwork: none."
	}
	return s
}

// addTool registers d with its raw schema and a handler that calls the broker.
func (s *Server) addTool(d *tool.Def) (err error) {
	// AddTool panics on a schema that is not an object; report it instead.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("mcpserver: adding tool %q: %v", d.Name, r)
		}
	}()
	s.mcp.AddTool(&mcp.Tool{
		Name:        d.Name,
		Title:       d.Hints.Title,
		Description: d.Description,
		InputSchema: d.Schema,
		Annotations: Annotations(d),
	}, s.handler(d.Name))
	return nil
}

// Annotations returns d's hints as MCP tool annotations, every hint stated
// (none left to the protocol's defaults). tools/list and `airlock tools
// --format mcp` both use it.
func Annotations(d *tool.Def) *mcp.ToolAnnotations {
	h := d.Hints
	return &mcp.ToolAnnotations{
		Title:           h.Title,
		ReadOnlyHint:    h.ReadOnly,
		DestructiveHint: &h.Destructive,
		IdempotentHint:  h.Idempotent,
		OpenWorldHint:   &h.OpenWorld,
	}
}

// Metrics returns the server's metrics.
func (s *Server) Metrics() *Metrics { return s.metrics }

// Serve serves one MCP session over t (stdio, a command's pipes, an
// in-memory transport) until the client leaves or ctx is done, then closes
// the session and its broker session.
func (s *Server) Serve(ctx context.Context, t mcp.Transport) error {
	ss, err := s.mcp.Connect(ctx, countedTransport{Transport: t, o: &s.owed}, nil)
	if err != nil {
		return fmt.Errorf("connecting the MCP session: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- ss.Wait() }()
	select {
	case err = <-done:
	case <-ctx.Done():
		// Closing an MCP session waits for its handlers: stop the calls first.
		s.release(ss)
		ss.Close()
		err = <-done
	}
	s.release(ss)
	return err
}

// session returns the broker session of ss, opening it on first use. The
// first use also starts a watcher that closes the broker session when ss ends.
func (s *Server) session(ctx context.Context, ss *mcp.ServerSession) (*broker.Session, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, errShutdown
	}
	b, ok := s.sessions[ss]
	if !ok {
		b = &binding{ready: make(chan struct{})}
		s.sessions[ss] = b
	}
	s.mu.Unlock()
	if ok {
		select {
		case <-b.ready:
			return b.sess, b.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	b.sess, b.err = s.opts.Open(context.WithoutCancel(ctx))
	if b.err != nil {
		// Forget the failure: the session's next call tries again.
		s.mu.Lock()
		if s.sessions[ss] == b {
			delete(s.sessions, ss)
		}
		s.mu.Unlock()
		close(b.ready)
		s.logger.Error("opening a broker session failed", "mcp_session", ss.ID(), "err", b.err)
		return nil, b.err
	}
	close(b.ready)
	s.metrics.sessionOpened()
	s.logger.Info("broker session opened", "mcp_session", ss.ID(), "session", b.sess.ID())
	go func() {
		_ = ss.Wait()
		s.release(ss)
	}()
	return b.sess, nil
}

// release closes the broker session bound to ss, if any. It is idempotent.
func (s *Server) release(ss *mcp.ServerSession) {
	s.mu.Lock()
	b, ok := s.sessions[ss]
	delete(s.sessions, ss)
	s.mu.Unlock()
	if !ok {
		return
	}
	<-b.ready
	if b.sess == nil {
		return
	}
	s.mu.Lock()
	s.closing++
	s.mu.Unlock()
	err := b.sess.Close()
	s.mu.Lock()
	s.closing--
	s.mu.Unlock()
	if err != nil {
		s.logger.Error("closing a broker session failed", "session", b.sess.ID(), "err", err)
	}
	s.logger.Info("broker session closed", "mcp_session", ss.ID(), "session", b.sess.ID())
}

// enter counts a call in, or reports false when the server is draining.
func (s *Server) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining {
		return false
	}
	s.calls.Add(1)
	s.inFlight++
	return true
}

// leave counts a call out.
func (s *Server) leave() {
	s.mu.Lock()
	s.inFlight--
	s.mu.Unlock()
	s.calls.Done()
}

// stats sums the broker sessions' running and waiting calls; sessions
// counts those open, including those still closing.
func (s *Server) stats() (inFlight, running, waiting, sessions int) {
	s.mu.Lock()
	inFlight = s.inFlight
	var list []*broker.Session
	for _, b := range s.sessions {
		select {
		case <-b.ready:
			if b.sess != nil {
				list = append(list, b.sess)
			}
		default:
		}
	}
	closing := s.closing
	s.mu.Unlock()
	for _, sess := range list {
		r, w := sess.Stats()
		running += r
		waiting += w
	}
	return inFlight, running, waiting, len(list) + closing
}

// Shutdown stops taking calls, waits for the calls in flight until ctx is
// done, then closes every broker session (which cancels and kills the calls
// still running and waits for them; each is audited) and every MCP session,
// waiting a short grace for those still writing an answer (see
// closeSessions). It returns ctx's error if calls had to be killed, or an
// error when a session had not closed within the grace.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.draining = true
	busy := s.inFlight > 0
	s.mu.Unlock()
	drained := make(chan struct{})
	go func() { s.calls.Wait(); close(drained) }()
	var err error
	select {
	case <-drained:
	case <-ctx.Done():
		err = fmt.Errorf("calls still running at the shutdown deadline were stopped: %w", ctx.Err())
	}
	s.mu.Lock()
	s.closed = true
	var all []*mcp.ServerSession
	for ss := range s.sessions {
		all = append(all, ss)
	}
	s.mu.Unlock()
	for _, ss := range all {
		s.release(ss)
	}
	<-drained
	s.settle(busy)
	if !s.closeSessions(answerGrace) && err == nil {
		err = errors.New("an MCP session could not close within its grace: an answer to it is still being written (its client may have stopped reading); closing the HTTP server's connections ends it")
	}
	return err
}

// closeSessions closes every MCP session, and reports whether all had
// closed within grace. A session closes once the answers it is writing
// are written, which a client that stops reading (over HTTP, with no
// write timeout on its connection, or one that takes each chunk just
// within it) can put off indefinitely: Shutdown leaves those to the
// closing of their connections (http.Server.Close) rather than wait.
func (s *Server) closeSessions(grace time.Duration) bool {
	var wg sync.WaitGroup
	for ss := range s.mcp.Sessions() {
		wg.Go(func() { ss.Close() })
	}
	closed := make(chan struct{})
	go func() { wg.Wait(); close(closed) }()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-closed:
		return true
	case <-t.C:
		return false
	}
}

// answerGrace bounds how long Shutdown waits, after the last handler has
// returned, for the answers to be written.
const answerGrace = 2 * time.Second

// settle waits until the answers of the calls that were in flight when
// Shutdown began are written: closing an SDK session drops an answer its
// handler has returned but the session has not yet sent. Each answer is
// counted as it is written (the connections Serve wraps count the
// responses they write; over HTTP each answer ends its POST, which is
// counted), so settle waits for the count to reach zero.
func (s *Server) settle(busy bool) {
	if !busy {
		return
	}
	s.owed.wait(answerGrace)
}
