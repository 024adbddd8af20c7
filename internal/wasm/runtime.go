// Package wasm runs WebAssembly (WASI preview 1) modules under wazero with
// nothing but what a grant gives them: preopens for granted directories
// (read-only ones truly read-only, see fs.go), the environment and
// arguments the caller builds, stdio, a clock and randomness, and no
// sockets. Memory (in wasm pages, per instance), wall time (the module is
// stopped at the deadline, even in a tight loop) and output are capped. A
// host module, "airlock" (host.go), lets a module call the session's tools
// through a caller-supplied function: the broker, for capsules.
//
// An Engine compiles each module once, in memory, and instantiates it
// afresh for every Run: nothing of one run survives into the next. Compiled
// code is never written to disk nor read from it: wazero's cache on disk is
// machine code loaded with only a checksum, so whoever could write it (a
// sandbox whose grant held the directory) chose code airlock would run
// natively, outside every sandbox.
package wasm

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/sandbox/diskguard"
	"github.com/airlockhq/airlock/wire"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
)

// PageSize is the size of one wasm memory page.
const PageSize = 64 << 10

// maxMemory is the most a wasm32 module can address.
const maxMemory = 65536 * PageSize

// Engine compiles and runs modules. It is safe for concurrent use.
type Engine struct {
	rt wazero.Runtime

	mu   sync.Mutex
	mods map[[32]byte]*Module
}

// NewEngine returns an engine. Close it to free compiled code.
func NewEngine(ctx context.Context) (*Engine, error) {
	// No compilation cache: see the package comment.
	cfg := wazero.NewRuntimeConfig().WithCloseOnContextDone(true)
	rt := wazero.NewRuntimeWithConfig(ctx, cfg)
	if err := instantiateWASI(ctx, rt); err != nil {
		rt.Close(ctx)
		return nil, fmt.Errorf("instantiating WASI: %w", err)
	}
	if err := instantiateHost(ctx, rt); err != nil {
		rt.Close(ctx)
		return nil, fmt.Errorf("instantiating the airlock host module: %w", err)
	}
	return &Engine{rt: rt, mods: map[[32]byte]*Module{}}, nil
}

// Close frees the engine's compiled modules.
func (e *Engine) Close(ctx context.Context) error { return e.rt.Close(ctx) }

// Module is a compiled module, ready to be instantiated.
type Module struct {
	compiled wazero.CompiledModule
	// SHA256 is the hash of the module's bytes.
	SHA256 [32]byte
	minMem uint64 // bytes its memory starts with
	// tableBytes is what its tables take at their maximum, allocated by
	// wazero outside the linear memory: counted against the memory limit.
	tableBytes uint64
}

// Compile compiles a module once; compiling the same bytes again returns
// the same Module.
func (e *Engine) Compile(ctx context.Context, wasm []byte) (*Module, error) {
	sum := sha256.Sum256(wasm)
	e.mu.Lock()
	m, ok := e.mods[sum]
	e.mu.Unlock()
	if ok {
		return m, nil
	}
	// Every table gets a maximum, so what the tables can take is known and
	// counted against the memory limit (boundTables). The bytes compiled
	// are a function of the bytes hashed, and nothing else.
	bounded, entries, err := boundTables(wasm)
	if err != nil {
		return nil, fmt.Errorf("reading the wasm module's tables: %w", err)
	}
	// Compiled afresh in every process, so on every core there is.
	c, err := e.rt.CompileModule(experimental.WithCompilationWorkers(ctx, runtime.GOMAXPROCS(0)), bounded)
	if err != nil {
		return nil, fmt.Errorf("compiling the wasm module: %w", err)
	}
	for name, imp := range c.ImportedFunctions() {
		mod, fn, _ := imp.Import()
		if mod != wasi_snapshot_preview1.ModuleName && mod != HostModule {
			c.Close(ctx)
			return nil, fmt.Errorf("the module imports %s.%s (%v), which airlock does not provide (only %s and %s)", mod, fn, name, wasi_snapshot_preview1.ModuleName, HostModule)
		}
	}
	pages, err := definedMemoryPages(wasm)
	if err != nil {
		c.Close(ctx)
		return nil, fmt.Errorf("reading the wasm module's memories: %w", err)
	}
	m = &Module{compiled: c, SHA256: sum, minMem: pages * PageSize, tableBytes: entries * tableEntryBytes}
	for _, d := range c.ExportedMemories() {
		m.minMem = max(m.minMem, uint64(d.Min())*PageSize)
	}
	for _, d := range c.ImportedMemories() {
		c.Close(ctx)
		mod, name, _ := d.Import()
		return nil, fmt.Errorf("the module imports memory %s.%s; airlock provides none", mod, name)
	}
	e.mu.Lock()
	if old, ok := e.mods[sum]; ok {
		e.mu.Unlock()
		c.Close(ctx)
		return old, nil
	}
	e.mods[sum] = m
	e.mu.Unlock()
	return m, nil
}

// Dir is one granted directory, preopened for the module.
type Dir struct {
	Host  string // host directory (absolute, resolved)
	Guest string // where the module sees it (absolute, slash-separated)
	// ReadOnly refuses every write below it.
	ReadOnly bool
	// Root, when set, is Host opened already (by openDir, when a wasm
	// tool was loaded), and Run uses it instead of opening Host again;
	// the caller closes it. Otherwise Run opens Host refusing any symlink
	// on the way to it.
	Root *os.Root
	// Grant, when set, decides every location below Host as it does for
	// the file tools (grant.CheckResolved): what it denies is absent, and
	// what it does not let be written (a read-only directory granted
	// inside this one, a protected path, airlock's own files once the
	// broker has guarded it) refuses writes, however the module's path
	// gets there. Nil leaves only the directory's own containment and
	// ReadOnly: for tests and tools that grant a whole tree.
	Grant *grant.Grant
}

// Config is one run of a module.
type Config struct {
	Args   []string // argv, program name first
	Env    []string // K=V, exactly what the module sees
	Dirs   []Dir
	Stdin  io.Reader // nil: empty
	Stdout io.Writer // nil: discarded
	Stderr io.Writer // nil: discarded
	// Memory caps the module's linear memory in bytes (rounded down to
	// whole pages); zero means the most wasm32 addresses (4 GiB).
	Memory int64
	// Time is the wall-time limit; zero means none beyond ctx.
	Time time.Duration
	// Output caps the bytes written to stdout and stderr together; zero
	// means no cap. Past it the rest is counted, not written.
	Output int64
	// FileSize is the largest a write may make a file in Dirs (the
	// grant's limits.file_size): a write, a write at an offset or a
	// truncate past it fails (EIO), as RLIMIT_FSIZE makes one fail for a
	// sandboxed command. Zero means no limit.
	FileSize int64
	// Tools serves the module's calls of the airlock host module; nil
	// refuses them all.
	Tools ToolFunc
}

// Outcome is how a run ended.
type Outcome struct {
	ExitCode uint32 // the module's exit status (0 when it returned from _start)
	// Trap is the wasm trap that ended the run ("unreachable", "out of
	// bounds memory access", ...), with Func the function it happened in
	// when wazero names one.
	Trap, Func string
	// LimitsHit names the limits the run hit: wire.LimitTime, LimitMemory,
	// LimitOutput, LimitDisk (the disk guard stopped it).
	LimitsHit []wire.Limit
	// PeakMemory is the largest the module's memory grew, in bytes.
	PeakMemory uint64
	// OmittedBytes is the output past the Output cap.
	OmittedBytes int64
}

// Hit reports whether the run hit the named limit.
func (o *Outcome) Hit(limit wire.Limit) bool {
	for _, l := range o.LimitsHit {
		if l == limit {
			return true
		}
	}
	return false
}

// ErrMemory is returned by Run when the module's initial memory, with
// what its tables can take at their maximum, exceeds the memory limit.
var ErrMemory = errors.New("the module's initial memory and tables exceed the memory limit")

// Run instantiates m afresh under cfg and runs its _start to the end.
// The error is for runs that could not start (bad configuration, a
// directory that cannot be opened); how a started run ended, traps and
// limits included, is in the Outcome.
func (e *Engine) Run(ctx context.Context, m *Module, cfg *Config) (*Outcome, error) {
	limit := uint64(maxMemory)
	if cfg.Memory > 0 && uint64(cfg.Memory) < limit {
		limit = uint64(cfg.Memory) / PageSize * PageSize
	}
	if m.minMem > limit || m.tableBytes > limit-m.minMem {
		return nil, fmt.Errorf("%w: it needs %d bytes of memory and %d of tables, the limit is %d", ErrMemory, m.minMem, m.tableBytes, limit)
	}
	// The tables, at their maximum, are charged to the limit first; the
	// linear memory may grow into the rest.
	limit -= m.tableBytes
	if cfg.Time > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.Time)
		defer cancel()
	}
	// The read-write directories are the host's own file systems, which
	// only the file size limit bounded file by file: the disk guard stops
	// a run that drives one toward full, as it stops a sandboxed command
	// (hostile case 13). Opened before the module runs, so that all it
	// writes counts.
	var writable []string
	for _, d := range cfg.Dirs {
		if !d.ReadOnly {
			writable = append(writable, d.Host)
		}
	}
	var diskFull atomic.Bool
	if guard := diskguard.Open(writable, 0); guard != nil {
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		stop := guard.Watch(func() {
			diskFull.Store(true)
			cancel(errDiskFull)
		})
		defer stop()
	}
	out := &capWriter{w: outFor(ctx, cfg.Stdout), left: cfg.Output, capped: cfg.Output > 0}
	errw := &capWriter{w: outFor(ctx, cfg.Stderr), shared: out}
	mc := wazero.NewModuleConfig().
		WithName("").
		WithArgs(cfg.Args...).
		WithStdout(out).WithStderr(errw).
		WithSysWalltime().WithSysNanotime().WithNanosleep(sleeper(ctx)).
		WithRandSource(rand.Reader)
	if cfg.Stdin != nil {
		mc = mc.WithStdin(stdinFor(ctx, cfg.Stdin))
	}
	for _, kv := range cfg.Env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("environment entry %q is not K=V", kv)
		}
		mc = mc.WithEnv(k, v)
	}
	fsc := wazero.NewFSConfig()
	var roots []*rootFS
	defer func() {
		for _, r := range roots {
			r.close()
		}
	}()
	files := new(atomic.Int64)  // shared: maxOpenFiles bounds the run
	listed := new(atomic.Int64) // shared: maxListed bounds the run
	mem := &memory{limit: limit}
	for _, d := range cfg.Dirs {
		r, err := newRootFS(d.Host, d.Root, d.ReadOnly, d.Grant, cfg.FileSize)
		if err != nil {
			return nil, fmt.Errorf("preopening %s: %w", d.Host, err)
		}
		r.files, r.listed, r.mem = files, listed, mem
		roots = append(roots, r)
		fsc = fsc.(sysfs.FSConfig).WithSysFSMount(r, d.Guest)
	}
	mc = mc.WithFSConfig(fsc)

	ctx = experimental.WithMemoryAllocator(ctx, mem)
	host := &hostState{tools: cfg.Tools}
	ctx = withHost(ctx, host)

	o := &Outcome{}
	inst, err := instantiate(ctx, e.rt, m.compiled, mc)
	// A host call cut at the deadline (a read of a silent stdin, a write
	// nobody takes, a sleep, a tool call) returns an error to the module,
	// which may then end on its own, exit code 0, before wazero notices
	// the deadline: the run still ended at its limit, and says so.
	ended := ctx.Err()
	if inst != nil {
		_ = inst.Close(context.WithoutCancel(ctx))
	}
	o.PeakMemory = mem.peak
	if diskFull.Load() {
		o.LimitsHit = append(o.LimitsHit, wire.LimitDisk)
	}
	if mem.refused {
		o.LimitsHit = append(o.LimitsHit, wire.LimitMemory)
	}
	if out.omitted > 0 {
		o.LimitsHit = append(o.LimitsHit, wire.LimitOutput)
		o.OmittedBytes = out.omitted
	}
	var exit *sys.ExitError
	switch {
	case ended != nil && (err == nil || errors.As(err, &exit) && exit.ExitCode() != sys.ExitCodeDeadlineExceeded && exit.ExitCode() != sys.ExitCodeContextCanceled):
		o.ExitCode = sys.ExitCodeContextCanceled
		if errors.Is(ended, context.DeadlineExceeded) {
			o.LimitsHit = append(o.LimitsHit, wire.LimitTime)
			o.ExitCode = sys.ExitCodeDeadlineExceeded
		}
	case err == nil:
	case errors.As(err, &exit):
		switch exit.ExitCode() {
		case sys.ExitCodeDeadlineExceeded:
			o.LimitsHit = append(o.LimitsHit, wire.LimitTime)
			o.ExitCode = exit.ExitCode()
		case sys.ExitCodeContextCanceled:
			o.ExitCode = exit.ExitCode()
			if ctx.Err() != nil && errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
				o.LimitsHit = append(o.LimitsHit, wire.LimitTime)
			}
		default:
			o.ExitCode = exit.ExitCode()
		}
	default:
		if ctx.Err() != nil {
			o.LimitsHit = append(o.LimitsHit, wire.LimitTime)
			o.ExitCode = sys.ExitCodeDeadlineExceeded
			break
		}
		o.Trap, o.Func = trapOf(err)
		if o.Trap == "" {
			return nil, fmt.Errorf("instantiating the wasm module: %w", err)
		}
		o.ExitCode = 1
	}
	return o, nil
}

// errDiskFull is the cause of a run's end when the disk guard stopped it.
var errDiskFull = errors.New("a file system the module may write fell below its floor of free space or inodes")

// errPanic is a run that panicked inside wazero.
var errPanic = errors.New("the wasm runtime panicked")

// instantiate instantiates (and so runs) the module, turning a panic
// inside wazero into an error: what a module does must never take the
// broker, and every other session of it, down. Checks before the run
// (Run's memory check) are what should refuse such a module; this is
// their backstop.
func instantiate(ctx context.Context, rt wazero.Runtime, c wazero.CompiledModule, mc wazero.ModuleConfig) (inst api.Module, err error) {
	defer func() {
		if p := recover(); p != nil {
			inst, err = nil, fmt.Errorf("%w: %v", errPanic, p)
		}
	}()
	return rt.InstantiateModule(ctx, c, mc)
}

// trapOf picks the trap and the innermost function out of a wazero
// runtime error: "module[] function[_start] failed: wasm error:
// unreachable\nwasm stack trace:\n\t.main.f(...)".
func trapOf(err error) (trap, fn string) {
	msg := err.Error()
	first, rest, _ := strings.Cut(msg, "\n")
	if strings.HasSuffix(first, "] failed: stack overflow") {
		// wazero's stack overflow is no "wasm error" and has no trace; it
		// is a trap all the same, the module's own doing.
		return "stack overflow", ""
	}
	_, t, ok := strings.Cut(first, "wasm error: ")
	if !ok {
		return "", ""
	}
	if _, trace, ok := strings.Cut(rest, "wasm stack trace:\n"); ok {
		line, _, _ := strings.Cut(strings.TrimSpace(trace), "\n")
		if i := strings.IndexByte(line, '('); i > 0 {
			line = line[:i]
		}
		fn = strings.TrimPrefix(strings.TrimSpace(line), ".") // an anonymous module's functions are ".name"
	}
	return t, fn
}

// memory is a linear memory that grows up to limit and no further, and
// remembers how large it grew and whether a grow was refused.
type memory struct {
	limit   uint64
	buf     []byte
	peak    uint64
	refused bool
}

// Allocate implements experimental.MemoryAllocator: one memory per run
// (a module has at most one).
func (m *memory) Allocate(capacity, _ uint64) experimental.LinearMemory {
	m.buf = make([]byte, 0, min(capacity, m.limit))
	return m
}

// Reallocate implements experimental.LinearMemory.
func (m *memory) Reallocate(size uint64) []byte {
	if size > m.limit {
		m.refused = true
		return nil
	}
	if size > uint64(cap(m.buf)) {
		// Grown by a quarter at least, as append grows a slice, but never
		// past the limit: append's own growth held up to a quarter more
		// than the limit.
		c := uint64(cap(m.buf))
		nb := make([]byte, size, min(max(size, c+c/4), m.limit))
		copy(nb, m.buf)
		m.buf = nb
	} else {
		m.buf = m.buf[:size]
	}
	m.peak = max(m.peak, size)
	return m.buf
}

// Free implements experimental.LinearMemory.
func (m *memory) Free() { m.buf = nil }

// capWriter writes to w until the shared budget of the pair is spent, then
// counts what it drops. A nil w discards.
type capWriter struct {
	mu      sync.Mutex
	w       io.Writer
	shared  *capWriter // stderr shares stdout's budget
	left    int64
	capped  bool
	omitted int64
}

func (c *capWriter) Write(p []byte) (int, error) {
	b := c
	if c.shared != nil {
		b = c.shared
	}
	b.mu.Lock()
	n := int64(len(p))
	keep := n
	if b.capped {
		keep = min(n, b.left)
		b.left -= keep
		b.omitted += n - keep
	}
	b.mu.Unlock()
	if c.w != nil && keep > 0 {
		if _, err := c.w.Write(p[:keep]); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// sleeper is a run's nanosleep (poll_oneoff's clock subscriptions, so Go's
// time.Sleep): it sleeps until the time asked for or until ctx, the run's
// context, is done. wazero stops a module at its deadline between host
// calls only, and its own nanosleep (time.Sleep) cannot be cut: a module
// asking to sleep a day under a 300 ms limit held the broker (and airlock
// run, past SIGTERM) for that day (red team).
func sleeper(ctx context.Context) func(ns int64) {
	return func(ns int64) {
		if ns <= 0 {
			return
		}
		t := time.NewTimer(time.Duration(ns))
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
	}
}

// stdinFor returns the module's stdin: r itself when a read of it cannot
// wait (a wasm tool's arguments, in memory), else r read through a
// ctxReader, so that a module reading a stdin that gives nothing (airlock
// run's own, a pipe whose writer waits) is stopped at its deadline like
// any other, not held in fd_read for as long as the writer likes.
func stdinFor(ctx context.Context, r io.Reader) io.Reader {
	switch r.(type) {
	case *bytes.Reader, *strings.Reader:
		return r
	}
	return &ctxReader{ctx: ctx, r: r}
}

// maxStdinRead bounds one read of a ctxReader: its buffer is the host's,
// outside the module's memory limit, and a short read is a read.
const maxStdinRead = 64 << 10

// ctxReader reads r until ctx is done. Each read of r runs in a goroutine
// of its own into a buffer of its own, and Read waits for it or for ctx;
// a read of r cut short by ctx is left to end when r gives, its bytes
// lost with the run they were for, and every later Read fails at once.
type ctxReader struct {
	ctx  context.Context
	r    io.Reader
	dead bool // a read of r was abandoned: r is no longer this reader's
}

func (c *ctxReader) Read(p []byte) (int, error) {
	if c.dead {
		return 0, c.ctx.Err()
	}
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	if len(p) == 0 {
		return 0, nil
	}
	buf := make([]byte, min(len(p), maxStdinRead))
	n, err, ok := untilDone(c.ctx, func() (int, error) { return c.r.Read(buf) })
	if !ok {
		c.dead = true
		return 0, err
	}
	return copy(p, buf[:n]), err
}

// untilDone runs op in a goroutine of its own and waits for it or for ctx.
// ok is false when ctx ended first (err is then ctx's): op is left to end
// when it can. A panic of op is its error (recoverInto).
func untilDone(ctx context.Context, op func() (int, error)) (n int, err error, ok bool) {
	type result struct {
		n   int
		err error
	}
	ch := make(chan result, 1)
	go func() {
		var res result
		defer func() { ch <- res }()
		defer recoverInto(&res.err) // as wazero would, had the call been its
		res.n, res.err = op()
	}()
	select {
	case res := <-ch:
		return res.n, res.err, true
	case <-ctx.Done():
		return 0, ctx.Err(), false
	}
}

// outFor returns what the module's stdout or stderr writes to: w itself
// when a write to it cannot wait (a buffer in memory, as a wasm tool's
// are), else w written through a ctxWriter, so that a module writing to a
// pipe nobody reads (airlock run's own stdout) is stopped at its deadline,
// and by SIGTERM, like any other, not held in fd_write until the reader
// moves.
func outFor(ctx context.Context, w io.Writer) io.Writer {
	switch w.(type) {
	case nil:
		return nil
	case *bytes.Buffer, *limitedBuffer:
		return w
	}
	return &ctxWriter{ctx: ctx, w: w}
}

// ctxWriter writes to w until ctx is done, as ctxReader reads: each chunk
// (of at most maxStdinRead bytes, copied, since the module's memory may go
// with the run) is written by a goroutine of its own, and Write waits for
// it or for ctx; a write cut short by ctx is left to end when w takes it,
// and every later Write fails at once.
type ctxWriter struct {
	ctx  context.Context
	w    io.Writer
	dead bool
}

func (c *ctxWriter) Write(p []byte) (int, error) {
	done := 0
	for done < len(p) {
		if c.dead {
			return done, c.ctx.Err()
		}
		if err := c.ctx.Err(); err != nil {
			return done, err
		}
		chunk := append([]byte(nil), p[done:done+min(len(p)-done, maxStdinRead)]...)
		n, err, ok := untilDone(c.ctx, func() (int, error) { return c.w.Write(chunk) })
		if !ok {
			c.dead = true
			return done, err
		}
		done += n
		if err != nil {
			return done, err
		}
		if n < len(chunk) {
			return done, io.ErrShortWrite
		}
	}
	return done, nil
}

// recoverInto turns a panic of a read or write that ctxReader or
// ctxWriter runs in a goroutine of its own into its error: wazero would
// have recovered it had the call run in the host function, and a panic in
// a goroutine of its own takes the whole process down.
func recoverInto(err *error) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("%w: %v", errPanic, p)
	}
}
