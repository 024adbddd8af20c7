package linux

import "sync"

// teardowns counts work running in the background, for the callers that
// must wait for it: the teardowns after early answers (a pool's release,
// the backend's Close wait for them), and a pool's builds and drains
// (drainAll). Unlike a sync.WaitGroup it lets work start while another
// goroutine waits, as calls and pool refills of other sessions do while
// one session's pool is released: a waiter waits for the work that had
// started when it began, not for later work, which may never stop coming.
// (A WaitGroup whose count rises from zero while a Wait that had to wait
// has not yet returned panics, taking the broker down.)
type teardowns struct {
	mu   sync.Mutex
	cond sync.Cond
	gen  uint64         // the generation teardowns starting now belong to
	live map[uint64]int // running teardowns, by the generation they started in
}

// start counts a teardown in; the caller calls done when it has ended.
func (t *teardowns) start() (done func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.live == nil {
		t.live = map[uint64]int{}
		t.cond.L = &t.mu
	}
	g := t.gen
	t.live[g]++
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		if t.live[g]--; t.live[g] == 0 {
			delete(t.live, g)
		}
		t.cond.Broadcast()
	}
}

// wait returns once every teardown that had started before it was called
// has ended.
func (t *teardowns) wait() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.live == nil {
		t.live = map[uint64]int{}
		t.cond.L = &t.mu
	}
	g := t.gen
	t.gen++
	for t.older(g) {
		t.cond.Wait()
	}
}

// older reports whether a teardown of generation g or before is running;
// t.mu is held.
func (t *teardowns) older(g uint64) bool {
	for k := range t.live {
		if k <= g {
			return true
		}
	}
	return false
}
