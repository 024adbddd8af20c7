package broker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
)

// errBusy is wrapped by the refusal of a call past its budget's queue.
var errBusy = errors.New("airlock is busy")

// Admission is a budget of sandboxes: the calls that run at once, those
// that may wait for one of them, and the background works that run at
// once. Every session has one; sessions given the same one (Options.
// Admission, as `airlock serve` gives all of its sessions) share it, so N
// of them start no more sandboxes together than one alone may. Refusals
// are at once, with a sentence naming the budget. It is safe for
// concurrent use.
//
// A shared budget is fair between its sessions without holding back a
// session alone: a call runs at once while a slot is free and no call
// waits, so one session may use every slot; but a slot that frees while
// calls wait goes to the waiting call whose session runs the fewest calls
// (then has the fewest waiting; then the longest waiting), and one session
// may fill at most half the queue, while a session with nothing waiting
// may always wait one call, even past a full queue. So sessions that flood
// the budget delay another's call by at most the shortest of their running
// calls, and never refuse it.
type Admission struct {
	mu      sync.Mutex
	max     int // calls that run at once
	used    int // slots taken
	queue   int // calls that may wait, over all sessions
	waiters []*waiter
	// queuedPerSession caps the calls one session has waiting in a
	// shared budget; 0: none.
	queuedPerSession int

	background chan struct{} // one token per background work running
	// perSession caps the background works one session of a shared
	// budget runs, so that one client cannot hold all of them for their
	// whole lifetime (hours) and refuse every other session's; 0: none.
	perSession int
	// scope says whose budget it is, in refusals: "in this session",
	// "across this server's sessions".
	scope string
}

// seat is one session's place in a budget: its calls running and
// waiting, guarded by the budget's mu.
type seat struct {
	running, waiting int
}

// waiter is a call waiting for a slot; ready is closed when it is given
// one.
type waiter struct {
	seat    *seat
	ready   chan struct{}
	granted bool
	queued  bool // counted against the queue
}

// NewAdmission returns a budget to share among sessions: maxConcurrent
// calls run at once (default DefaultMaxConcurrent), maxQueue more wait
// (default DefaultMaxQueue; negative: none wait), and maxBackground
// background works run at once (default DefaultMaxBackground). Zero means
// the default.
//
// One session may have at most half of the queue waiting and run at most
// half of the background works (at least one of each), so the others
// always have some; a freed call slot goes first to the session running
// the fewest calls.
func NewAdmission(maxConcurrent, maxQueue, maxBackground int) *Admission {
	a := newAdmission(maxConcurrent, maxQueue, maxBackground, "across this server's sessions")
	a.perSession = max(1, cap(a.background)/2)
	if a.queue > 0 {
		a.queuedPerSession = max(1, a.queue/2)
	}
	return a
}

func newAdmission(maxConcurrent, maxQueue, maxBackground int, scope string) *Admission {
	if maxConcurrent <= 0 {
		maxConcurrent = DefaultMaxConcurrent
	}
	switch {
	case maxQueue == 0:
		maxQueue = DefaultMaxQueue
	case maxQueue < 0:
		maxQueue = 0
	}
	if maxBackground <= 0 {
		maxBackground = DefaultMaxBackground
	}
	return &Admission{
		max:        maxConcurrent,
		queue:      maxQueue,
		background: make(chan struct{}, maxBackground),
		scope:      scope,
	}
}

// enter takes a call slot for st's session, waiting in the queue if there
// is room in it; waiting counts the session's calls waiting, for its
// Stats. It returns an error wrapping errBusy when the queue (or the
// session's share of it) is full, or ctx's error if ctx ends while the
// call waits. A call that entered must leave.
func (a *Admission) enter(ctx context.Context, st *seat, waiting *atomic.Int64) error {
	return a.take(ctx, st, waiting, true)
}

// wait takes a call slot, waiting as long as it takes and outside the
// queue's count (a wasm call, which holds no sandbox of the backend's and
// is bounded by its own limits).
func (a *Admission) wait(ctx context.Context, st *seat, waiting *atomic.Int64) error {
	return a.take(ctx, st, waiting, false)
}

func (a *Admission) take(ctx context.Context, st *seat, waiting *atomic.Int64, queued bool) error {
	a.mu.Lock()
	if a.used < a.max && len(a.waiters) == 0 {
		a.used++
		st.running++
		a.mu.Unlock()
		return nil
	}
	// In a shared budget a session with nothing waiting may always wait
	// one call, past a full queue: other sessions filling it cannot
	// refuse it, and a freed slot goes to it first if it runs the fewest.
	reserve := a.queuedPerSession > 0 && st.waiting == 0
	if queued && !reserve {
		if a.queuedNow() >= a.queue {
			a.mu.Unlock()
			return fmt.Errorf("%w: %d calls are running %s and %d more are waiting, the most it queues; try again shortly", errBusy, a.max, a.scope, a.queue)
		}
		if a.queuedPerSession > 0 && st.waiting >= a.queuedPerSession {
			a.mu.Unlock()
			return fmt.Errorf("%w: this session already has %d calls waiting, the most one session may of the %d places %s; try again when one has run", errBusy, st.waiting, a.queue, a.scope)
		}
	}
	w := &waiter{seat: st, ready: make(chan struct{}), queued: queued}
	a.waiters = append(a.waiters, w)
	st.waiting++
	a.mu.Unlock()
	waiting.Add(1)
	defer waiting.Add(-1)
	select {
	case <-w.ready:
		return nil
	case <-ctx.Done():
	}
	a.mu.Lock()
	if w.granted {
		// Given a slot as ctx ended: pass it on.
		a.mu.Unlock()
		a.leave(st)
		return ctx.Err()
	}
	a.remove(w)
	st.waiting--
	a.mu.Unlock()
	return ctx.Err()
}

// queuedNow counts the waiting calls held against the queue; a.mu is held.
func (a *Admission) queuedNow() int {
	n := 0
	for _, w := range a.waiters {
		if w.queued {
			n++
		}
	}
	return n
}

// remove takes w out of the waiters; a.mu is held.
func (a *Admission) remove(w *waiter) {
	for i, x := range a.waiters {
		if x == w {
			a.waiters = append(a.waiters[:i], a.waiters[i+1:]...)
			return
		}
	}
}

// leave gives st's call slot back: to the waiting call whose session runs
// the fewest calls, and of those has the fewest waiting (a session that
// queues many waits behind one that queues few), the longest waiting among
// equals; or free when none waits.
func (a *Admission) leave(st *seat) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st.running--
	var next *waiter
	for _, w := range a.waiters {
		if next == nil || w.seat.running < next.seat.running ||
			w.seat.running == next.seat.running && w.seat.waiting < next.seat.waiting {
			next = w
		}
	}
	if next == nil {
		a.used--
		return
	}
	a.remove(next)
	next.seat.waiting--
	next.seat.running++
	next.granted = true
	close(next.ready)
}

// startBackground takes a background work's place, or returns why not;
// held counts the caller's own.
func (a *Admission) startBackground(held *atomic.Int64) string {
	if a.perSession > 0 && held.Load() >= int64(a.perSession) {
		return fmt.Sprintf("this session already runs %d background commands, the most one session may of the %d allowed %s; stop one with background_command first", a.perSession, cap(a.background), a.scope)
	}
	select {
	case a.background <- struct{}{}:
		held.Add(1)
		return ""
	default:
		return fmt.Sprintf("%d background commands are already running %s (the most allowed); stop one with background_command first", cap(a.background), a.scope)
	}
}

// endBackground gives a background work's place back.
func (a *Admission) endBackground(held *atomic.Int64) {
	held.Add(-1)
	<-a.background
}
