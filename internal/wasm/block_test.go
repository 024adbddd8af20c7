package wasm

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/wasm/wasmtest"
)

// endsWithin runs f and reports whether it returned before the wait ran
// out: a run that is cut at its deadline returns at once after it; one
// blocked in a host call does not return for hours. On failure, unblock
// is called to let f return, and its return waited for.
func endsWithin(t *testing.T, what string, wait time.Duration, f, unblock func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
		return
	case <-time.After(wait):
	}
	t.Errorf("%s did not return: a host call blocked past the run's deadline", what)
	if unblock != nil {
		unblock()
		<-done
	}
}

// TestSleepEndsAtTheDeadline: a module's poll_oneoff with a clock
// subscription (Go's time.Sleep, any wasi sleep) is a host call that
// sleeps; a long one must end at the run's deadline, not at its own end,
// and so must a run whose context is cancelled (SIGTERM).
func TestSleepEndsAtTheDeadline(t *testing.T) {
	m := probe(t)
	var out bytes.Buffer
	var o *Outcome
	var err error
	endsWithin(t, "a run sleeping 24h under a 300ms limit", time.Minute, func() {
		o, err = testEngine(t).Run(context.Background(), m, &Config{
			Args:   []string{"probe", "sleep", "24h"},
			Stdout: &out,
			Time:   300 * time.Millisecond,
		})
	}, nil)
	if t.Failed() {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if !o.Hit("time") || bytes.Contains(out.Bytes(), []byte("woke")) {
		t.Errorf("outcome %+v, output %q: want the time limit hit while sleeping", o, out.String())
	}

	ctx, cancel := context.WithCancel(context.Background())
	out.Reset()
	endsWithin(t, "a cancelled run sleeping 24h", time.Minute, func() {
		_, err = testEngine(t).Run(ctx, m, &Config{
			Args:   []string{"probe", "sleep", "24h"},
			Stdout: &writeSignal{w: &out, first: cancel},
		})
	}, nil)
}

// writeSignal calls first at its first write.
type writeSignal struct {
	w     io.Writer
	first func()
}

func (s *writeSignal) Write(p []byte) (int, error) {
	if s.first != nil {
		s.first()
		s.first = nil
	}
	return s.w.Write(p)
}

// TestBlockedStdinEndsAtTheDeadline: a module reading a stdin that never
// gives anything (airlock run's own stdin, a pipe whose writer waits) is
// in a host call; the deadline must end the run all the same.
func TestBlockedStdinEndsAtTheDeadline(t *testing.T) {
	m := probe(t)
	pr, pw := io.Pipe()
	defer pw.Close()
	var out bytes.Buffer
	var o *Outcome
	var err error
	endsWithin(t, "a run reading a silent stdin under a 300ms limit", time.Minute, func() {
		o, err = testEngine(t).Run(context.Background(), m, &Config{
			Args:   []string{"probe", "stdin"},
			Stdin:  pr,
			Stdout: &out,
			Time:   300 * time.Millisecond,
		})
	}, func() { pw.Close() })
	if t.Failed() {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if !o.Hit("time") {
		t.Errorf("outcome %+v, output %q: want the time limit hit while reading", o, out.String())
	}
}

// TestBlockedStdoutEndsAtTheDeadline: a module writing to a stdout nobody
// reads (airlock run's own, a full pipe) is in a host call; the deadline
// must end the run all the same.
func TestBlockedStdoutEndsAtTheDeadline(t *testing.T) {
	m := probe(t)
	pr, pw := io.Pipe()
	defer pr.Close()
	var o *Outcome
	var err error
	endsWithin(t, "a run writing to an unread stdout under a 300ms limit", time.Minute, func() {
		o, err = testEngine(t).Run(context.Background(), m, &Config{
			Args:   []string{"probe", "loop"},
			Stdout: pw,
			Time:   300 * time.Millisecond,
		})
	}, func() { pr.Close() })
	if t.Failed() {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	if !o.Hit("time") {
		t.Errorf("outcome %+v: want the time limit hit while writing", o)
	}
}

// panicWriter panics at every write.
type panicWriter struct{}

func (panicWriter) Write([]byte) (int, error) { panic("stdout broke") }

// TestPanickingStdoutIsTheRunsError: a write to stdout runs in a goroutine
// of its own (so that the deadline can cut it); a panic there must stay
// the run's, as it would in wazero's host call, not end the process.
func TestPanickingStdoutIsTheRunsError(t *testing.T) {
	m := probe(t)
	_, err := testEngine(t).Run(context.Background(), m, &Config{
		Args:   []string{"probe", "args"},
		Stdout: panicWriter{},
		Time:   time.Minute,
	})
	_ = err // how the module takes a failed write is its own; the process lives
}

// TestStackOverflowIsATrap: a module recursing without end overflows
// wazero's stack; that is a trap of the run, reported as one, not an
// error of the runtime (which a wasm tool's caller reads as "could not
// run").
func TestStackOverflowIsATrap(t *testing.T) {
	m := compile(t, wasmtest.Module(
		wasmtest.Section(wasmtest.SecType, wasmtest.Vec([]byte{0x60, 0, 0})),
		wasmtest.Section(wasmtest.SecFunction, wasmtest.Vec([]byte{0}, []byte{0})),
		wasmtest.Section(wasmtest.SecExport, wasmtest.Vec(append(wasmtest.Name("_start"), 0x00, 1))),
		wasmtest.Section(wasmtest.SecCode, wasmtest.Vec(wasmtest.Body(0x10, 0x00), wasmtest.Body(0x10, 0x00))), // f: call f; _start: call f
	))
	o, err := testEngine(t).Run(context.Background(), m, &Config{Memory: 1 << 20, Time: time.Minute})
	if err != nil {
		t.Fatalf("run: %v, want an outcome", err)
	}
	if o.Trap != "stack overflow" {
		t.Errorf("outcome %+v, want the trap stack overflow", o)
	}
}

// TestMemoryNeverHoldsPastTheLimit: the linear memory grows page by page
// to its limit; what the host holds for it (the buffer's capacity) must
// not pass the limit either. append's amortised growth held up to a
// quarter more than the limit (a 1 GiB limit, 1.25 GiB held).
func TestMemoryNeverHoldsPastTheLimit(t *testing.T) {
	const limit = 4096 * PageSize // 256 MiB
	m := &memory{limit: limit}
	m.Allocate(PageSize, limit)
	for size := uint64(PageSize); size <= limit; size += 64 * PageSize {
		if b := m.Reallocate(size); uint64(len(b)) != size {
			t.Fatalf("reallocate %d: len %d", size, len(b))
		}
		if c := uint64(cap(m.buf)); c > limit {
			t.Fatalf("at %d bytes the memory holds %d, past its limit %d", size, c, uint64(limit))
		}
	}
}

// TestCutHostCallStillHitsTheTimeLimit: a host call cut at the deadline
// (here a read of a silent stdin) returns an error to the module, which
// may end on its own, exit code 0, before wazero notices the deadline;
// the run ended at its limit all the same, and must say so every time (CI
// saw one such run in thirty reported as a clean exit).
func TestCutHostCallStillHitsTheTimeLimit(t *testing.T) {
	m := probe(t)
	for i := range 40 {
		pr, pw := io.Pipe()
		out, o := run(t, m, Config{Stdin: pr, Time: 20 * time.Millisecond}, "stdin")
		pw.Close()
		if !o.Hit("time") || o.ExitCode == 0 {
			t.Fatalf("run %d: outcome %+v, output %q: want the time limit hit and a non-zero exit", i, o, out)
		}
	}
}
