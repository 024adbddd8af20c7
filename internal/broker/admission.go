package broker

import (
	"context"
	"errors"
	"fmt"
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
type Admission struct {
	slots      chan struct{} // one token per call running
	queue      int
	waiting    atomic.Int64
	background chan struct{} // one token per background work running
	// perSession caps the background works one session of a shared
	// budget runs, so that one client cannot hold all of them for their
	// whole lifetime (hours) and refuse every other session's; 0: none.
	perSession int
	// scope says whose budget it is, in refusals: "in this session",
	// "across this server's sessions".
	scope string
}

// NewAdmission returns a budget to share among sessions: maxConcurrent
// calls run at once (default DefaultMaxConcurrent), maxQueue more wait
// (default DefaultMaxQueue; negative: none wait), and maxBackground
// background works run at once (default DefaultMaxBackground). Zero means
// the default.
//
// One session may run at most half of the background works (at least
// one), so the others always have some.
func NewAdmission(maxConcurrent, maxQueue, maxBackground int) *Admission {
	a := newAdmission(maxConcurrent, maxQueue, maxBackground, "across this server's sessions")
	a.perSession = max(1, cap(a.background)/2)
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
		slots:      make(chan struct{}, maxConcurrent),
		queue:      maxQueue,
		background: make(chan struct{}, maxBackground),
		scope:      scope,
	}
}

// enter takes a call slot, waiting in the queue if there is room in it;
// waiting counts the caller's own calls waiting. It returns an error
// wrapping errBusy when the queue is full, or ctx's error if ctx ends
// while the call waits. A call that entered must leave.
func (a *Admission) enter(ctx context.Context, waiting *atomic.Int64) error {
	select {
	case a.slots <- struct{}{}:
		return nil
	default:
	}
	if a.waiting.Add(1) > int64(a.queue) {
		a.waiting.Add(-1)
		return fmt.Errorf("%w: %d calls are running %s and %d more are waiting, the most it queues; try again shortly", errBusy, cap(a.slots), a.scope, a.queue)
	}
	waiting.Add(1)
	defer func() { a.waiting.Add(-1); waiting.Add(-1) }()
	select {
	case a.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// wait takes a call slot, waiting as long as it takes (a wasm call, which
// holds no sandbox of the backend's and is bounded by its own limits).
func (a *Admission) wait(ctx context.Context) error {
	select {
	case a.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// leave gives a call slot back.
func (a *Admission) leave() { <-a.slots }

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
