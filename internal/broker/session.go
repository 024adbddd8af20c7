// Package broker owns sessions: a session is one grant, an id and a records
// directory. Each Call parses the arguments strictly, checks them against the
// grant, builds a sandbox Spec, runs it through a backend, classifies the
// outcome, caps and labels the output, and writes an audit record before the
// result is returned. Nothing reaches a sandbox that the grant did not allow.
package broker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/secret"
	"github.com/airlockhq/airlock/internal/writetmp"
	"github.com/airlockhq/airlock/tool"
	"github.com/airlockhq/airlock/wire"
)

// Errors callers branch on.
var (
	// ErrClosed is returned by Call after Close.
	ErrClosed = errors.New("session is closed")
	// ErrAudit is returned when a call's audit record could not be written;
	// the session refuses every later call.
	ErrAudit = errors.New("audit record could not be written")
)

// errNilContext refuses a call made with a nil context.
var errNilContext = errors.New("a call needs a context, not nil (context.Background() for one that is never cancelled)")

// Defaults for Options left zero.
const (
	DefaultMaxConcurrent = 8
	DefaultMaxQueue      = 64
	// DefaultMaxCallBytes caps one call's arguments (the content of a
	// write_file, say): 16 MiB, the most one MCP stdio message carries.
	DefaultMaxCallBytes = 16 << 20
	// DefaultMaxInFlightBytes caps the arguments of every call of a
	// session in flight at once, so concurrent large writes cannot take
	// the broker's memory: past it a call is refused as busy.
	DefaultMaxInFlightBytes = 32 << 20
)

// Options configure a session. Open copies them.
type Options struct {
	// Grant is what the session's calls may touch. Required.
	Grant *grant.Grant
	// Backend builds the sandboxes. Required.
	Backend sandbox.Backend
	// RecordsDir is where sessions keep their records; this session writes
	// RecordsDir/<id>/. Required.
	RecordsDir string
	// ID names the session; empty generates "ses_<hex>".
	ID string
	// Secrets are values of the grant's secrets, by name, given up front.
	Secrets map[string]string
	// LoadSecret reads a secret not in Secrets from its source when a call
	// first needs it; nil means only Secrets are known. A secret that
	// cannot be read fails only the calls that need it.
	LoadSecret SecretLoader
	// ToolRoot is the directory file tools resolve beneath: "/" in a sandbox
	// (whose mounts hold only the grant), the granted directory when the
	// backend does not isolate. Empty means "/".
	ToolRoot string
	// Admission, when set, is a budget of sandboxes shared with the other
	// sessions given it (a server's sessions): their calls running, those
	// waiting and their background work count against it together, and
	// MaxConcurrent, MaxQueue and MaxBackground are ignored. Nil gives the
	// session a budget of its own.
	Admission *Admission
	// MaxConcurrent calls run at once; more wait in a queue of MaxQueue
	// (negative: no queue); past that a call is refused at once.
	MaxConcurrent, MaxQueue int
	// BackgroundLogCap caps each background command's log file (default
	// DefaultBackgroundLogCap); past it the output is only counted.
	BackgroundLogCap int64
	// BackgroundLogsKept is how many bytes of its ended background
	// commands' logs a session keeps on disk (default 4 times
	// BackgroundLogCap): past it the oldest ended work's log is removed, so
	// a session that starts work after work cannot fill the records' disk.
	BackgroundLogsKept int64
	// BackgroundWall is the wall-time limit of background commands (default
	// DefaultBackgroundWall); their other limits are the shell tool's.
	BackgroundWall time.Duration
	// MaxBackground background commands may run at once (default
	// DefaultMaxBackground); past that run_in_background is refused.
	MaxBackground int
	// Egress configures the egress proxy of calls that reach the network
	// (resolver, dialer, extra environment); nil means the defaults.
	Egress *EgressOptions
	// Pool is the number of warm sandboxes kept per shape when the backend
	// can keep them (see pool.go): zero means DefaultPool, negative means
	// none, and never more than the calls that run at once (MaxConcurrent,
	// or the shared Admission's). A waiting warm sandbox holds no
	// placeholder in the tree.
	Pool int
	// OneCall says the session is closed as soon as its call returns
	// (airlock exec and airlock call run one call, then exit): each call's
	// record, written before the call returns as always, is then fsynced
	// with the session's close record, in one fsync at Close, instead of
	// in one of its own just before it (audit.Log.WriteDeferred).
	OneCall bool
	// Logger receives operational logs; nil discards.
	Logger *slog.Logger
	// Private are more of airlock's own files the session's sandboxes must
	// not see (a server's token file); see OwnFiles.
	Private []string
	// MaxCallBytes caps one call's arguments (default DefaultMaxCallBytes);
	// MaxInFlightBytes caps those of all calls in flight at once (default
	// DefaultMaxInFlightBytes). A call past either is refused before it runs.
	MaxCallBytes, MaxInFlightBytes int
	// WasmCall runs the grant's wasm tools; nil refuses them as unknown.
	// It is given the session's grant (Session.Grant: guarded, see
	// GuardGrant), by which the module's files are judged.
	WasmCall WasmCall
	// Capsule names the WebAssembly capsule whose calls the session
	// serves (airlock run); its records carry it. Nil for other sessions.
	Capsule *audit.Capsule
}

// OwnFiles returns what a session keeps from its sandboxes, for
// grant.Guard: hidden are the records directory, the grant's secret files
// and remote token file, and private (a relative one taken from the
// working directory); kept read-only are the grant files, the grant's
// remote CA, the running binary and the separate init beside it (held
// while missing). A sandbox that could
// rewrite the grant, read a token or replace the binary or its init would
// widen its own next call.
func OwnFiles(g *grant.Grant, records string, private []string) (hide, keep []string) {
	if abs, err := filepath.Abs(records); records != "" && err == nil {
		records = abs
	}
	hide = []string{records}
	for _, p := range private {
		// A file named relative to the working directory (--token-file
		// tok) is that directory's, which a grant may well hold.
		if abs, err := filepath.Abs(p); p != "" && err == nil {
			p = abs
		}
		hide = append(hide, p)
	}
	for _, r := range g.Secrets() {
		if f, ok := strings.CutPrefix(r.Source, "file:"); ok && filepath.IsAbs(f) {
			hide = append(hide, f)
		}
	}
	// The grant's remote hands: the token file is a secret, and the CA
	// decides whom a later session trusts with it.
	if f, ok := strings.CutPrefix(g.Remote().Token, "file:"); ok && filepath.IsAbs(f) {
		hide = append(hide, f)
	}
	keep = g.Files()
	if ca := g.Remote().CA; filepath.IsAbs(ca) {
		keep = append(keep, ca)
	}
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		// The separate init beside it, there or not: whoever puts one
		// there chooses the next sandboxes' init (see
		// sandbox.SeparateInitName).
		keep = append(keep, exe, filepath.Join(filepath.Dir(exe), sandbox.SeparateInitName))
	}
	return hide, keep
}

// GuardGrant returns g keeping airlock's own files (OwnFiles: the records
// directory, secret files, private, the grant files, the running binary)
// from whatever g gives files to, as Open does for its sessions
// (Session.Grant). Whatever hands files to untrusted code outside a
// session's calls (a capsule's preopens before its session opens, say)
// must use the guarded grant, never g.
func GuardGrant(g *grant.Grant, records string, private []string) (*grant.Grant, error) {
	records, err := filepath.Abs(records)
	if err != nil {
		return nil, fmt.Errorf("records directory: %w", err)
	}
	// A records directory that cannot be reached is named as such, not
	// as one of airlock's own paths that Guard could not resolve.
	if _, err := os.Lstat(records); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("records directory %q: %w", records, err)
	}
	hide, keep := OwnFiles(g, records, private)
	return g.Guard(hide, keep)
}

// Session is one grant's calls. It is safe for concurrent use.
type Session struct {
	wasm    wasmSchemas // the grant's wasm tools' schemas, resolved once
	opts    Options
	id      string
	dir     string
	log     *audit.Log
	secrets *secretStore
	logger  *slog.Logger

	// adm is the session's budget, its own or shared; waiting and running
	// are the session's own calls, for Stats.
	adm     *Admission
	waiting atomic.Int64
	running atomic.Int64
	// seat is the session's place in adm's call budget.
	seat seat
	// bgHeld is the session's own background works in adm's budget.
	bgHeld atomic.Int64

	bg          background
	releasePool func() // the session's hold on the backend's pool

	ctx    context.Context // cancelled by Close
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	closed bool
	// closeDone is closed when the first Close finishes, with closeErr.
	closeDone chan struct{}
	closeErr  error
	// live marks the session and its calls in flight in the records
	// directory, so a broker that dies leaves a trace (audit.Recover).
	live *audit.Live
	// inflight is the bytes of arguments of the calls running now.
	inflight atomic.Int64
	// calls counts the session's calls in flight, against maxCalls.
	calls    atomic.Int64
	maxCalls int64
	// searches counts the session's web searches, against limits.searches.
	searches atomic.Int64
	// cost sums what the session's calls spent.
	costMu sync.Mutex
	cost   wire.Cost
}

// Open starts a session.
func Open(opts *Options) (*Session, error) {
	if opts == nil || opts.Grant == nil || opts.Backend == nil || opts.RecordsDir == "" {
		return nil, errors.New("broker: Options need Grant, Backend and RecordsDir")
	}
	o := *opts
	if o.ToolRoot == "" {
		o.ToolRoot = "/"
	}
	if o.MaxCallBytes <= 0 {
		o.MaxCallBytes = DefaultMaxCallBytes
	}
	if o.MaxInFlightBytes <= 0 {
		o.MaxInFlightBytes = DefaultMaxInFlightBytes
	}
	if o.BackgroundLogCap <= 0 {
		o.BackgroundLogCap = DefaultBackgroundLogCap
	}
	if o.BackgroundLogsKept <= 0 {
		o.BackgroundLogsKept = backgroundLogsKeptFactor * o.BackgroundLogCap
	}
	if o.BackgroundWall <= 0 {
		o.BackgroundWall = DefaultBackgroundWall
	}
	if o.Admission == nil {
		o.Admission = newAdmission(o.MaxConcurrent, o.MaxQueue, o.MaxBackground, "in this session")
	}
	if o.ID == "" {
		o.ID = "ses_" + randomHex(8)
	} else if !validID(o.ID) {
		return nil, fmt.Errorf("broker: session id %q: use letters, digits, '-' and '_' only", o.ID)
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	records, err := filepath.Abs(o.RecordsDir)
	if err != nil {
		return nil, fmt.Errorf("broker: records directory: %w", err)
	}
	if o.Grant, err = GuardGrant(o.Grant, records, o.Private); err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	o.Grant = rememberProtected(records, o.Grant, logger)
	dir := filepath.Join(o.RecordsDir, o.ID)
	lg, err := audit.Open(dir)
	if err != nil {
		return nil, fmt.Errorf("opening session records: %w", err)
	}
	// Sessions whose broker died get their missing records now; then this
	// one is marked live, so that its own in-flight calls are never lost.
	if done, err := audit.Recover(records, func(f audit.InFlight) { sweepTemp(logger, f) }); err != nil {
		logger.Warn("recovering the records of sessions whose broker died", "err", err)
	} else if len(done) > 0 {
		logger.Info("recorded the interrupted calls of sessions whose broker died", "sessions", done)
	}
	// A broker killed with SIGKILL left its calls' egress socket
	// directories; the first session of each process removes them.
	sweepEgressOnce.Do(func() { sweepEgressDirs(logger) })
	live, err := audit.OpenLive(records, o.ID)
	if err != nil {
		lg.Close()
		return nil, fmt.Errorf("opening session records: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Session{
		opts:      o,
		id:        o.ID,
		dir:       dir,
		log:       lg,
		secrets:   newSecretStore(o.Secrets, o.LoadSecret),
		logger:    logger.With("session", o.ID),
		adm:       o.Admission,
		maxCalls:  int64(o.Admission.max + o.Admission.queue + maxBrokerCalls),
		bg:        background{works: map[string]*work{}},
		ctx:       ctx,
		cancel:    cancel,
		closeDone: make(chan struct{}),
		live:      live,
	}
	s.secrets.preload(o.Grant.Secrets())
	// Every field of every record, not only the arguments: a model's tool
	// name, a host the proxy saw, whatever a later field carries.
	lg.SetRedact(func(text string) string { return s.secrets.redact().String(text) })
	// The open record names what the grant allows only as a risk, and
	// a read-write tree its scan did not see whole (grant.ScanRisks).
	if err := lg.Write(audit.Record{Kind: audit.KindSession, Session: s.id, Decision: "open", Backend: o.Backend.Report().Backend, Rule: grantName(o.Grant), Risks: o.Grant.Risks(), Capsule: o.Capsule}); err != nil {
		lg.Close()
		live.Close()
		cancel()
		return nil, fmt.Errorf("%w: %w", ErrAudit, err)
	}
	s.openPool()
	return s, nil
}

// ID returns the session's id.
func (s *Session) ID() string { return s.id }

// Dir returns the session's records directory.
func (s *Session) Dir() string { return s.dir }

// Grant returns the session's grant.
func (s *Session) Grant() *grant.Grant { return s.opts.Grant }

// Stats reports the calls running and waiting now.
func (s *Session) Stats() (running, waiting int) {
	return int(s.running.Load()), int(s.waiting.Load())
}

// Close cancels every call in flight, kills every background command, waits
// for them all, and closes the records. Close is idempotent.
func (s *Session) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		// Another caller is closing: return only once it is done, so that
		// no caller (a process about to exit, say) goes on while sandboxes
		// are still being torn down.
		<-s.closeDone
		return s.closeErr
	}
	s.closed = true
	s.mu.Unlock()
	defer close(s.closeDone)
	s.cancel()
	s.wg.Wait()
	s.stopAll()
	// Every call and background work has ended: the session's records are
	// complete, and are closed before the pool drains. Its warm sandboxes
	// hold nothing of the user's and are no calls, and tearing them down
	// can take a while on a loaded machine, long enough for a client that
	// gives its server a few seconds after closing stdin to kill it first.
	err := s.log.Write(audit.Record{Kind: audit.KindSession, Session: s.id, Decision: "close"})
	if cerr := s.log.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = s.live.Close()
	}
	s.closePool()
	s.closeErr = err
	return err
}

// Result is a completed call as the model and the caller see it.
type Result struct {
	CallID string
	// Output is what the model reads; Output.Content carries airlock's label.
	Output wire.ToolOutput
	// Class is the outcome class (see the Class constants).
	Class wire.Class
	// Decision is the grant's verdict on the call.
	Decision grant.Decision
}

// Refused reports whether the grant (or admission control) refused the call.
func (r *Result) Refused() bool { return r.Class == ClassRefused }

// Call runs one tool call. It returns an error only when the session cannot
// take calls (closed, or its audit log failed); every other outcome, a refusal
// included, is a Result.
func (s *Session) Call(ctx context.Context, name string, args json.RawMessage) (*Result, error) {
	ctx, leave, err := s.enter(ctx)
	if err != nil {
		return nil, err
	}
	defer leave()

	start := time.Now()
	c := &call{id: "call_" + randomHex(8), tool: name, args: args, start: start}
	res := s.run(ctx, c)
	if c.begun && c.out.Class != ClassOK {
		// The tool did not finish (a limit, a cancel, a lost sandbox): a
		// temporary file it was writing may be left.
		sweepTemp(s.logger, audit.InFlight{CallID: c.id, Dirs: c.dirs})
	}
	if err := s.record(c, res); err != nil {
		if !c.begun {
			return nil, err
		}
		// The call ran: say what it did, never that it did not. Its
		// in-flight mark stays, so the records account for it later.
		res.Output.Content += "\n" + fmt.Sprintf("[airlock: this call ran, but its audit record could not be written (%v); later calls are refused until the records can be kept]", err)
		return res, nil
	}
	if c.begun {
		s.live.End(audit.InFlight{CallID: c.id})
	}
	if len(args) >= largeCall {
		// Give a large call's memory back to the system now, not at the
		// runtime's leisure: a broker that served a few big writes should
		// not keep their peak.
		debug.FreeOSMemory()
	}
	return res, nil
}

// enter admits one call (Call or Exec) to the session: it refuses when the
// session is closed or its records failed, and otherwise returns the
// call's context, cancelled by Close, and leave, which the call must run
// when it ends (Close waits for it).
func (s *Session) enter(ctx context.Context) (context.Context, func(), error) {
	if ctx == nil {
		// Refused before the call is counted: context.WithCancel panics on
		// a nil parent, and a panic after wg.Add left Close waiting for a
		// call that would never leave.
		return nil, nil, errNilContext
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, nil, ErrClosed
	}
	s.wg.Add(1)
	s.mu.Unlock()
	if err := s.log.Healthy(); err != nil {
		s.wg.Done()
		return nil, nil, fmt.Errorf("%w: %w", ErrAudit, err)
	}
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(s.ctx, cancel)
	return ctx, func() { stop(); cancel(); s.wg.Done() }, nil
}

// maxBrokerCalls is how many calls a session may have in flight past the
// calls its admission budget runs and queues: background_command's (a
// wait holds no call slot) and background starts.
const maxBrokerCalls = 64

// largeCall is the argument size past which a call's memory is returned to
// the system when it ends.
const largeCall = 4 << 20

// call is the broker's state for one call.
type call struct {
	id     string
	tool   string
	args   json.RawMessage
	start  time.Time
	limits grant.Limits
	out    Outcome
	begun  bool // marked in flight in the records directory
	// dirs are the host directories of the paths the call may write, where
	// write_file and edit_file make their temporary files (journalled in
	// its in-flight mark).
	dirs []string
	// bytesOut is the output of a command whose streams are the user's
	// (Exec), which no Result carries.
	bytesOut int
}

func (s *Session) run(ctx context.Context, c *call) *Result {
	refuse := func(d grant.Decision, why string) *Result {
		d.Allowed = false
		if d.Reason == "" {
			d.Reason = why
		}
		c.out = Outcome{Class: ClassRefused, Detail: d.Reason}
		return &Result{CallID: c.id, Class: ClassRefused, Decision: d,
			Output: wire.ToolOutput{Content: s.labelRefusal(c.tool, d.Reason), IsError: true}}
	}
	def, ok := tool.Lookup(c.tool)
	if !ok {
		if w, isWasm := s.opts.Grant.WasmTool(c.tool); isWasm && s.opts.WasmCall != nil {
			return s.runWasm(ctx, c, w, refuse)
		}
		return refuse(grant.Decision{Rule: "tools"}, fmt.Sprintf("unknown tool %q", c.tool))
	}
	// Memory: each call's arguments are held a few times over (decoded,
	// framed for the sandbox, piped), so both one call's and the session's
	// total are bounded before anything is decoded.
	if n := len(c.args); n > s.opts.MaxCallBytes {
		return refuse(grant.Decision{Rule: "limits.call_bytes"}, fmt.Sprintf("the call's arguments are %d bytes; the most one call may carry is %d bytes (%s): split the content over several calls (write_file, then edit_file)", n, s.opts.MaxCallBytes, grant.FormatSize(int64(s.opts.MaxCallBytes))))
	}
	n := int64(len(c.args))
	if s.inflight.Add(n) > int64(s.opts.MaxInFlightBytes) {
		s.inflight.Add(-n)
		return refuse(grant.Decision{Rule: "admission"}, fmt.Sprintf("airlock is busy: the calls in flight carry %s of arguments, the most it holds at once; try again when they finish", grant.FormatSize(int64(s.opts.MaxInFlightBytes))))
	}
	defer s.inflight.Add(-n)
	// Each call in flight holds an in-flight mark (an open file in the
	// records directory), and the broker's own calls (background_command's
	// waits, up to 600 s) and wasm calls are held by no queue: the calls a
	// session has in flight at once are bounded here, before any is marked.
	if k := s.calls.Add(1); k > s.maxCalls {
		s.calls.Add(-1)
		return refuse(grant.Decision{Rule: "admission"}, fmt.Sprintf("airlock is busy: this session has %d calls in flight, the most one session holds at once; try again when one has answered", k-1))
	}
	defer s.calls.Add(-1)
	if !s.opts.Grant.ToolEnabled(c.tool) {
		return refuse(grant.Decision{Rule: "tools.enabled"}, fmt.Sprintf("tool %q is not enabled by the grant", c.tool))
	}
	args, err := def.Parse(c.args)
	if err != nil {
		return refuse(grant.Decision{Rule: "arguments"}, err.Error())
	}
	acc := args.Access()
	if c.tool == "web_search" {
		// The provider is the grant's, not the model's: the call reaches
		// its host, which the check and the secrets must see.
		if h := s.opts.Grant.WebSearchHost(); h != "" {
			acc.Hosts = append(acc.Hosts, h)
		}
	}
	d := s.opts.Grant.Check(grantCall(c.tool, acc, s.opts.Grant.WorkDir()))
	if !d.Allowed {
		return refuse(d, "")
	}
	secrets, err := s.secretsFor(c.tool, acc.Hosts)
	if err != nil {
		return refuse(grant.Decision{Rule: "secrets"}, err.Error())
	}
	if c.tool == "web_search" {
		if most, set := s.opts.Grant.MaxSearches(); set {
			if n := s.searches.Add(1); n > int64(most) {
				s.searches.Add(-1)
				return refuse(grant.Decision{Rule: "limits.searches"}, fmt.Sprintf("this session has made %d web searches, the most the grant's limits.searches (%d) allows; raise limits.searches in the grant to allow more", n-1, most))
			}
		}
	}
	c.limits = s.opts.Grant.LimitsFor(c.tool)
	// The call is marked in flight before anything runs: if the records
	// directory cannot take it (a full disk), nothing runs.
	c.dirs = writeDirs(acc, d)
	if err := s.live.Begin(audit.InFlight{Kind: audit.KindCall, CallID: c.id, Tool: c.tool, Dirs: c.dirs}); err != nil {
		s.logger.Error("cannot record a call in flight; refusing it", "call", c.id, "err", err)
		return refuse(grant.Decision{Rule: "audit"}, fmt.Sprintf("the audit records cannot be written (%v), so nothing runs; free space in the records directory", err))
	}
	c.begun = true
	// Background work (background.go) is the broker's own: it starts or
	// answers at once and takes no call slot.
	if sh, ok := args.(tool.ShellArgs); def.Broker || ok && sh.RunInBackground {
		return s.runBroker(ctx, c, args, d, refuse)
	}

	// Admission: a bounded number run, a bounded number wait, the rest are
	// refused at once.
	switch err := s.adm.enter(ctx, &s.seat, &s.waiting); {
	case errors.Is(err, errBusy):
		return refuse(grant.Decision{Rule: "admission"}, err.Error())
	case err != nil:
		c.out = Outcome{Class: ClassCancelled, Output: failure(SentenceCancelled), Detail: "cancelled while queued"}
		return &Result{CallID: c.id, Class: ClassCancelled, Decision: d, Output: s.label(c.tool, c.out.Output, nil, true)}
	}
	s.running.Add(1)
	defer func() { s.running.Add(-1); s.adm.leave(&s.seat) }()

	spec := s.toolSpec(def, c.limits)
	in := &wire.ToolInput{
		Tool: c.tool,
		Args: c.args,
		Context: wire.CallContext{
			CallID:  c.id,
			Session: s.id,
			Secrets: secrets,
			Root:    s.opts.ToolRoot,
			Cwd:     s.opts.Grant.WorkDir(),
			Limits: wire.ToolLimits{
				OutputBytes: c.limits.Output,
				FileBytes:   c.limits.FileSize,
				TimeoutMS:   c.limits.Time.Milliseconds(),
			},
		},
	}
	if sr := s.opts.Grant.WebSearch(); sr != nil && c.tool == "web_search" {
		in.Context.Search = &wire.Search{Provider: sr.Provider, Endpoint: sr.Endpoint}
	}
	c.out = s.dispatchEgress(ctx, c, acc, spec, in)
	s.addCost(&c.out)
	var iso *wire.Isolation
	if c.out.Result != nil {
		iso = &c.out.Result.Isolation
	}
	return &Result{CallID: c.id, Class: c.out.Class, Decision: d, Output: s.label(c.tool, c.out.Output, iso, c.out.Class != ClassOK)}
}

// writeDirs returns the host directories of the paths acc may write, as
// the grant resolved them (d.Paths, in acc.Paths' order).
func writeDirs(acc tool.Access, d grant.Decision) []string {
	var dirs []string
	for i, p := range acc.Paths {
		if p.Write && i < len(d.Paths) {
			if dir := filepath.Dir(d.Paths[i]); !slices.Contains(dirs, dir) {
				dirs = append(dirs, dir)
			}
		}
	}
	return dirs
}

// sweepTemp removes the temporary files the call f left in the
// directories it may write (writetmp.Sweep: only files named with its
// tag).
func sweepTemp(logger *slog.Logger, f audit.InFlight) {
	tag := writetmp.Tag(f.CallID)
	for _, dir := range f.Dirs {
		n, err := writetmp.Sweep(dir, tag)
		if err != nil {
			logger.Warn("removing a killed call's temporary files", "call", f.CallID, "dir", dir, "err", err)
		}
		if n > 0 {
			logger.Info("removed the temporary files of a call that was killed", "call", f.CallID, "dir", dir, "count", n)
		}
	}
}

// addCost completes what a call spent with what its sandbox measured (CPU,
// peak memory, wall time) and adds it to the session's total.
func (s *Session) addCost(o *Outcome) {
	c := o.Output.Meta.Cost
	if r := o.Result; r != nil {
		if c == nil {
			c = &wire.Cost{}
		}
		c.WallSeconds = r.Duration.Seconds()
		c.CPUSeconds = r.CPU.Seconds()
		c.PeakMemory = r.PeakMemory
	}
	if c == nil {
		return
	}
	o.Output.Meta.Cost = c
	s.costMu.Lock()
	s.cost.Add(c)
	s.costMu.Unlock()
}

// Cost returns what the session's calls have spent so far.
func (s *Session) Cost() wire.Cost {
	s.costMu.Lock()
	defer s.costMu.Unlock()
	return s.cost
}

// grantCall describes a call's access for the grant checker.
func grantCall(name string, acc tool.Access, cwd string) grant.Call {
	gc := grant.Call{Tool: name, Hosts: acc.Hosts, Exec: acc.Exec, Cwd: cwd}
	for _, p := range acc.Paths {
		gc.Paths = append(gc.Paths, grant.PathUse{Path: p.Path, Write: p.Write})
	}
	return gc
}

// record writes the call's audit record.
func (s *Session) record(c *call, res *Result) error {
	rec := audit.Record{
		Kind:     audit.KindCall,
		Session:  s.id,
		CallID:   c.id,
		Tool:     c.tool,
		Decision: "allowed",
		Rule:     res.Decision.Rule,
		Risks:    res.Decision.Risks,
		Class:    c.out.Class,
		Detail:   s.secrets.redact().String(c.out.Detail),
		Duration: ms(time.Since(c.start)),
		BytesOut: len(res.Output.Content) + c.bytesOut,
		Capsule:  s.opts.Capsule,
	}
	rec.SetArgs(redactJSON(s.secrets.redact(), c.args))
	rec.Truncated = res.Output.Truncated
	rec.Cost = c.out.Output.Meta.Cost
	rec.ExitCode = c.out.Output.Meta.ExitCode
	if res.Class == ClassRefused {
		rec.Decision, rec.Reason = "refused", s.secrets.redact().String(res.Decision.Reason)
	} else {
		rec.Limits = &audit.Limits{
			TimeMS:      c.limits.Time.Milliseconds(),
			MemoryBytes: c.limits.Memory,
			Processes:   c.limits.Processes,
			OutputBytes: c.limits.Output,
			FileBytes:   c.limits.FileSize,
		}
	}
	if r := c.out.Result; r != nil {
		rec.Backend = r.Isolation.Backend
		rec.Isolation = r.Isolation.Features
		exit := r.ExitCode
		rec.Exit = &exit
		rec.Signal = r.Signal
		rec.SetupMS = ms(r.Setup)
		// The backend's, and a limit the tool enforced itself (classify).
		rec.LimitsHit = withLimit(r.LimitsHit, c.out.Output.Meta.Limit)
		rec.Unenforced = r.Isolation.Unenforced
		rec.Remote = r.Remote
	}
	write := s.log.Write
	if s.opts.OneCall {
		write = s.log.WriteDeferred // Close follows: one fsync for both
	}
	if err := write(rec); err != nil {
		s.logger.Error("audit record lost; refusing further calls", "call", c.id, "err", err)
		return fmt.Errorf("%w: %w", ErrAudit, err)
	}
	return nil
}

func redactJSON(r *secret.Redactor, raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	if !json.Valid(raw) {
		b, _ := json.Marshal(string(r.Bytes(raw)))
		return b
	}
	return r.Bytes(raw) // a copy only where a secret is replaced
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func validID(id string) bool {
	if len(id) == 0 || len(id) > 64 {
		return false
	}
	for _, r := range id {
		if !(r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}
