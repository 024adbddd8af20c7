// Package audit writes and reads airlock's call records: one JSON line per
// call (and per background start and end, and per egress decision), appended
// to a session's records file before the call's result is returned. A record
// that cannot be written is an error the broker turns into a refused call; a
// record is never dropped silently.
//
// Durability: Write returns once the record's line is written to the file
// (write(2)), so it is in the kernel's page cache and survives the broker's
// death (kill -9, a crash) whole. The log's syncer goroutine then fsyncs the
// file, coalescing every record written while the previous fsync ran into
// the next one, so a call never waits for the disk (WriteDeferred leaves a
// record's fsync to the next record's or to Close, for a session that
// closes as its one call returns). Only a power loss or a
// kernel crash can lose records: those written since the last fsync
// completed (on an idle log, none; under load, the last few milliseconds'
// worth). A failed fsync fails the log like a failed write: every later Write
// returns the error, so the broker refuses further calls. Close waits for
// the syncer, syncs what is left and reports any failure.
package audit

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/airlockhq/airlock/wire"
)

// FileName is the name of the records file in a session's directory.
const FileName = "audit.jsonl"

// Kinds of record.
const (
	KindCall            = "call"
	KindBackgroundStart = "background-start"
	KindBackgroundEnd   = "background-end"
	KindEgress          = "egress"
	KindSession         = "session"
)

// Record is one line of the audit log. Fields that do not apply are omitted.
type Record struct {
	Time    time.Time `json:"time"`
	Kind    string    `json:"kind"`
	Session string    `json:"session"`
	CallID  string    `json:"call_id,omitempty"`
	Tool    string    `json:"tool,omitempty"`
	// Args are the call's arguments with secret values redacted.
	Args json.RawMessage `json:"args,omitempty"`
	// ArgsBytes and ArgsSHA256, on a record whose Args were abridged (a
	// string longer than MaxArgString: see SetArgs), are the length and
	// the SHA-256 (hex) of the whole arguments, secrets redacted.
	ArgsBytes  int    `json:"args_bytes,omitempty"`
	ArgsSHA256 string `json:"args_sha256,omitempty"`
	// Decision is "allowed" or "refused"; Rule names the grant rule that
	// decided; Reason explains a refusal.
	Decision string   `json:"decision,omitempty"`
	Rule     string   `json:"rule,omitempty"`
	Reason   string   `json:"reason,omitempty"`
	Risks    []string `json:"risks,omitempty"`
	// Backend and Isolation say what sandbox ran the call.
	Backend   string   `json:"backend,omitempty"`
	Isolation []string `json:"isolation,omitempty"`
	// Remote names the remote hands that ran the call (endpoint and
	// identity); empty for a sandbox on the broker's host.
	Remote string  `json:"remote,omitempty"`
	Limits *Limits `json:"limits,omitempty"`
	// Unenforced names limits the call asked for that the host could not
	// enforce, run anyway because the grant accepted that.
	Unenforced []wire.Limit `json:"unenforced_limits,omitempty"`
	// Outcome: the classification (a wire.Class; for background-start and
	// -end records the work's state), the runner's exit code, signal, and a
	// failure's detail (never shown to the model).
	Class  wire.Class `json:"class,omitempty"`
	Exit   *int       `json:"exit,omitempty"`
	Signal int        `json:"signal,omitempty"`
	Detail string     `json:"detail,omitempty"`
	// ExitCode is the exit status of the command a tool ran (shell), as
	// the tool reported it: Exit is the runner's, 0 whenever the tool
	// finished, whatever its command returned.
	ExitCode *int `json:"exit_code,omitempty"`
	// LimitsHit names every limit the sandbox hit ("time", "memory",
	// "processes", "output"), whether or not it ended the call.
	LimitsHit []wire.Limit `json:"limits_hit,omitempty"`
	SetupMS   float64      `json:"setup_ms,omitempty"`
	Duration  float64      `json:"duration_ms,omitempty"`
	BytesOut  int          `json:"bytes_out,omitempty"`
	// Truncated reports that the model's output was cut at a cap.
	Truncated bool `json:"truncated,omitempty"`
	// WorkID names background work (background-start/-end records).
	WorkID string `json:"work_id,omitempty"`
	// Capsule names the WebAssembly capsule whose calls these are
	// (airlock run), on its session's records and each of its calls.
	Capsule *Capsule `json:"capsule,omitempty"`
	// Egress decisions.
	Host string `json:"host,omitempty"`
	Port int    `json:"port,omitempty"`
	Addr string `json:"addr,omitempty"`
	// Count, on an egress record that stands for several decisions alike
	// (a sandbox past its share of single records), is how many, made
	// from Time to Until.
	Count int       `json:"count,omitempty"`
	Until time.Time `json:"until,omitzero"`
	// Cost is what the call spent (searches, bytes fetched, the sandbox's
	// CPU time, peak memory and wall time).
	Cost *wire.Cost `json:"cost,omitempty"`
}

// Limits are the limits a call ran under.
type Limits struct {
	TimeMS      int64 `json:"time_ms,omitempty"`
	MemoryBytes int64 `json:"memory_bytes,omitempty"`
	Processes   int   `json:"processes,omitempty"`
	OutputBytes int64 `json:"output_bytes,omitempty"`
	FileBytes   int64 `json:"file_bytes,omitempty"`
}

// MaxText is the longest text field (a refusal's reason, a failure's
// detail, a rule, a risk) a record keeps; a longer one is abridged as a
// long argument string is (AbridgeText). Names and ids (the tool, the work,
// a host) keep at most MaxArgString.
const MaxText = 16 << 10

// bound abridges r's text fields: a reason or a detail may echo what a
// model sent (an unknown tool's name, a path, a field), which must not make
// a record of megabytes, nor hide what follows behind padding, whoever
// writes the record.
func (r *Record) bound() {
	for _, f := range []*string{&r.Reason, &r.Detail, &r.Rule} {
		*f = AbridgeText(*f, MaxText)
	}
	for _, f := range []*string{&r.Kind, &r.Session, &r.CallID, &r.Tool, &r.Decision, &r.Backend, &r.Remote, &r.WorkID, &r.Host, &r.Addr} {
		*f = AbridgeText(*f, MaxArgString)
	}
	copied := false
	for i, s := range r.Risks {
		if t := AbridgeText(s, MaxText); t != s {
			if !copied { // the caller's slice is left alone
				r.Risks, copied = slices.Clone(r.Risks), true
			}
			r.Risks[i] = t
		}
	}
}

// ErrClosed is returned by Write after Close.
var ErrClosed = errors.New("audit log is closed")

// Log appends records to one file. It is safe for concurrent use.
type Log struct {
	mu     sync.Mutex
	f      *os.File // nil once closed
	path   string
	err    error // the first write or sync failure; the log stays failed
	dirty  bool  // written since the syncer last started an fsync
	closed bool

	// redact replaces secret values in a record's text (SetRedact).
	redact func(string) string

	file   *os.File             // the file, for the syncer and Close
	sync   func(*os.File) error // (*os.File).Sync; tests replace it
	kick   chan struct{}        // one pending "dirty" signal for the syncer
	synced chan struct{}        // closed when the syncer has exited
}

// Open opens (creating if needed) the records file in dir.
func Open(dir string) (*Log, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating records directory %q: %w", dir, err)
	}
	path := filepath.Join(dir, FileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening audit log: %w", err)
	}
	// A FIFO keeps no records: opened for reading and writing (which does
	// not wait) it would take them and then block every write, the log's
	// lock held, once its buffer filled. (A device is let be: /dev/full
	// stands for a full disk in tests, and fails each write at once.)
	if st, err := f.Stat(); err != nil || st.Mode()&os.ModeNamedPipe != 0 {
		f.Close()
		if err == nil {
			err = errors.New("it is a FIFO, not a file")
		}
		return nil, fmt.Errorf("opening audit log %s: %w", path, err)
	}
	if err := endTornLine(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("opening audit log %s: %w", path, err)
	}
	l := &Log{f: f, file: f, path: path, sync: (*os.File).Sync, kick: make(chan struct{}, 1), synced: make(chan struct{})}
	go l.syncer()
	return l, nil
}

// endTornLine ends the file's last line with a newline when it has none: a
// writer that died mid-record (kill -9 during a long write, a write cut
// short by a full disk) left it torn, and the next record appended (the
// interrupted call Recover writes for it, a reopened session's) would
// otherwise be glued onto it and read back as one corrupt line with it.
func endTornLine(f *os.File) error {
	st, err := f.Stat()
	if err != nil || st.Size() == 0 {
		return err
	}
	last := make([]byte, 1)
	if _, err := f.ReadAt(last, st.Size()-1); err != nil {
		return fmt.Errorf("reading its last line: %w", err)
	}
	if last[0] == '\n' {
		return nil
	}
	if _, err := f.Write([]byte{'\n'}); err != nil {
		return fmt.Errorf("ending its torn last line: %w", err)
	}
	return nil
}

// syncer fsyncs the file whenever a record was written since its last
// fsync started; records written during an fsync share the next one. It
// exits when Close closes kick.
func (l *Log) syncer() {
	defer close(l.synced)
	for range l.kick {
		if err := l.syncDirty(); err != nil {
			return
		}
	}
}

// syncDirty fsyncs the file if anything was written since the last fsync
// started. A failure fails the log and is returned.
func (l *Log) syncDirty() error {
	l.mu.Lock()
	if !l.dirty || l.err != nil {
		err := l.err
		l.mu.Unlock()
		return err
	}
	l.dirty = false
	l.mu.Unlock()
	if err := l.sync(l.file); err != nil {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.err == nil {
			l.err = fmt.Errorf("syncing audit log %s: %w", l.path, err)
		}
		return l.err
	}
	return nil
}

// SetRedact makes the log pass every text field of every record it writes
// (arguments, names, ids, hosts, reasons, details, risks: each one, not a
// chosen few) through redact, which replaces secret values, before the
// record is bounded and written. What a model names (an unknown tool, a
// host) and what a remote peer answers (a redirect's host, which the egress
// proxy records) reach many fields, and a secret must reach none: a
// writer that forgets to redact a field, or a field added later, cannot
// put one on disk. Nil redacts nothing.
func (l *Log) SetRedact(redact func(string) string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.redact = redact
}

// redactText passes every text field of r through f. Slices and the
// capsule are copied where a value changes: the caller's are left alone.
func (r *Record) redactText(f func(string) string) {
	for _, p := range []*string{&r.Kind, &r.Session, &r.CallID, &r.Tool, &r.ArgsSHA256, &r.Decision, &r.Rule, &r.Reason, &r.Backend, &r.Remote, &r.Detail, &r.WorkID, &r.Host, &r.Addr} {
		if *p != "" {
			*p = f(*p)
		}
	}
	if len(r.Args) > 0 {
		if s := f(string(r.Args)); s != string(r.Args) {
			r.Args = json.RawMessage(s)
		}
		if !json.Valid(r.Args) {
			// A secret found across a JSON escape ("\u0041…" holds one
			// starting "u0041") is replaced escape and all, here or by
			// the writer before (the broker redacts a call's arguments
			// too): the arguments are no longer JSON, and as they are the
			// record could not be encoded, a call without a record. They
			// are recorded as a string instead.
			r.Args, _ = json.Marshal(string(r.Args))
		}
	}
	if r.Class != "" {
		r.Class = wire.Class(f(string(r.Class)))
	}
	r.Risks = redactEach(r.Risks, f)
	r.Isolation = redactEach(r.Isolation, f)
	r.Unenforced = redactEach(r.Unenforced, f)
	r.LimitsHit = redactEach(r.LimitsHit, f)
	if c := r.Capsule; c != nil {
		d := Capsule{Name: f(c.Name), Version: f(c.Version), SHA256: f(c.SHA256)}
		if d != *c {
			r.Capsule = &d
		}
	}
}

// redactEach returns xs with each passed through f, a copy if any changed.
func redactEach[S ~string](xs []S, f func(string) string) []S {
	copied := false
	for i, x := range xs {
		if y := S(f(string(x))); y != x {
			if !copied {
				xs, copied = slices.Clone(xs), true
			}
			xs[i] = y
		}
	}
	return xs
}

// Path returns the file the log writes.
func (l *Log) Path() string { return l.path }

// Healthy reports the log's first write failure, if any.
func (l *Log) Healthy() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return ErrClosed
	}
	return l.err
}

// Write appends r as one line. It returns once the line is written to the
// file; the syncer fsyncs it soon after (see the package doc). Once a write
// or a sync has failed, every later write fails with the same error.
func (l *Log) Write(r Record) error { return l.write(r, true) }

// WriteDeferred appends r as Write does, written (write(2)) before it
// returns, but leaves its fsync to the next Write's or to Close, whichever
// comes first, instead of starting one now: for the record of a call whose
// session closes as soon as it returns (airlock exec and airlock call run
// one call and exit), so that record and the session's close record share
// one fsync, which the process waits for before it exits, instead of two
// in a row. The window in which a power loss can lose it is the same as
// Write's (the fsync would still be running), plus the moment until Close.
func (l *Log) WriteDeferred(r Record) error { return l.write(r, false) }

func (l *Log) write(r Record, kick bool) error {
	if r.Time.IsZero() {
		r.Time = time.Now().UTC()
	}
	l.mu.Lock()
	redact := l.redact
	l.mu.Unlock()
	if redact != nil {
		// Before bound: an abridged field may keep only part of a value.
		r.redactText(redact)
	}
	r.bound()
	line, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encoding audit record: %w", err)
	}
	line = append(line, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return ErrClosed
	}
	if l.err != nil {
		return l.err
	}
	if _, err := l.f.Write(line); err != nil {
		l.err = fmt.Errorf("writing audit log %s: %w", l.path, err)
		return l.err
	}
	l.dirty = true
	if !kick {
		return nil
	}
	select {
	case l.kick <- struct{}{}:
	default: // the syncer has a signal pending already
	}
	return nil
}

// Close stops the syncer, syncs the records it had not synced yet and
// closes the file. It returns the log's failure, if a write or a sync ever
// failed, or the final sync's or close's.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.f = nil // later writes fail with ErrClosed
	close(l.kick)
	l.mu.Unlock()
	<-l.synced
	err := l.syncDirty()
	if cerr := l.file.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("closing audit log %s: %w", l.path, cerr)
	}
	return err
}

// A Problem is a line of an audit file that is not a record: corrupt, or
// torn (the last line, cut short by a writer that died mid-write).
type Problem struct {
	File string
	Line int
	Torn bool
	Err  error
}

func (p Problem) Error() string {
	if p.Torn {
		return fmt.Sprintf("%s:%d: torn record: the writer stopped mid-line (a crash or a full disk?)", p.File, p.Line)
	}
	return fmt.Sprintf("%s:%d: not a record: %v", p.File, p.Line, p.Err)
}

// Decode reads records from r, one per line, calling fn for each. A line
// that does not parse does not stop it: bad is called with its line number
// (counted from first), and whether it is a torn last line (no newline
// after it). An error from fn or from reading stops it.
func Decode(r io.Reader, first int, fn func(Record) error, bad func(line int, torn bool, err error)) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for n := first; ; n++ {
		line, long, rerr := readLine(br)
		eof := errors.Is(rerr, io.EOF)
		torn := eof && (len(line) > 0 || long)
		if rerr != nil && !eof {
			return rerr
		}
		if long {
			bad(n, torn, ErrLineTooLong)
		} else if text := bytes.TrimSpace(line); len(text) > 0 {
			var rec Record
			if err := json.Unmarshal(text, &rec); err != nil {
				// A line that ends mid-value is torn too: Open ended it
				// with a newline so that the records after it stay whole.
				var se *json.SyntaxError
				torn = torn || errors.As(err, &se) && se.Offset >= int64(len(text))
				bad(n, torn, err)
			} else if err := fn(rec); err != nil {
				return err
			}
		}
		if eof {
			return nil
		}
	}
}

// MaxLine is the longest line Decode reads as a record: far more than any
// record a broker writes (its text fields and argument strings are
// abridged, a call's arguments bounded), so a longer line is corrupt or
// hostile, reported as not a record without being held.
const MaxLine = 256 << 20

// ErrLineTooLong is the error Decode reports for a line longer than
// MaxLine.
var ErrLineTooLong = fmt.Errorf("longer than %d bytes", MaxLine)

// readLine reads one line, its newline included, holding at most MaxLine
// bytes of it: a longer one is read to its end and dropped, and long is
// true. Recovery reads a dead broker's file at every start of airlock, and
// airlock log every file: a line of gigabytes (a torn or planted file)
// must not be held in memory, several times over, for either.
func readLine(br *bufio.Reader) (line []byte, long bool, err error) {
	for {
		chunk, err := br.ReadSlice('\n')
		if !long {
			switch n := len(line) + len(chunk); {
			case n > MaxLine:
				line, long = nil, true
			case n > cap(line):
				// Doubling: append's slower growth of large slices
				// would allocate five times the line on its way.
				grown := make([]byte, len(line), min(max(2*cap(line), n), MaxLine))
				copy(grown, line)
				line = append(grown, chunk...)
			default:
				line = append(line, chunk...)
			}
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, long, err
		}
	}
}

// ReadAll reads every session's records under root (root/<session>/audit.jsonl),
// or only session's when it is not empty, sorted by time. Lines that are
// not records are returned as Problems, never a reason to return nothing.
func ReadAll(root, session string) ([]Record, []Problem, error) {
	pattern := filepath.Join(root, "*", FileName)
	if session != "" {
		pattern = filepath.Join(root, session, FileName)
	}
	files, err := filepath.Glob(pattern)
	if err != nil {
		return nil, nil, fmt.Errorf("listing audit logs: %w", err)
	}
	var out []Record
	var problems []Problem
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			problems = append(problems, Problem{File: p, Err: err})
			continue
		}
		err = Decode(f, 1, func(r Record) error { out = append(out, r); return nil }, func(line int, torn bool, err error) {
			problems = append(problems, Problem{File: p, Line: line, Torn: torn, Err: err})
		})
		f.Close()
		if err != nil {
			problems = append(problems, Problem{File: p, Err: err})
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out, problems, nil
}
