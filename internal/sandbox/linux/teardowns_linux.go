package linux

import "sync"

// teardowns counts the teardowns running in the background after early
// answers, for the callers that must wait for them (a pool's release, the
// backend's Close). Unlike a sync.WaitGroup it lets a teardown start while
// another goroutine waits, as calls of other sessions do while one
// session's pool is released: a waiter waits for the teardowns that had
// started when it began, not for later ones, which may never stop coming.
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
