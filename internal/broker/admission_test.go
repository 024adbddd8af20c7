package broker_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/sandboxtest"
)

// TestSharedAdmission: sessions given one Admission share its budget, so
// two of them run no more calls, queue no more (but for one reserve place
// each) and keep no more background work than one alone may: past it a
// call of either is refused at once, saying the budget is the server's.
func TestSharedAdmission(t *testing.T) {
	f := newFixture(t, grant.Limits{})
	adm := broker.NewAdmission(1, 1, 1)
	shared := func(o *broker.Options) { o.Admission, o.ToolRoot = adm, f.ws }
	a := f.open(t, sandboxtest.Unsandboxed(t), shared)
	b := f.open(t, sandboxtest.Unsandboxed(t), shared)

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for _, s := range []*broker.Session{a, b} { // one running, one queued
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.Call(ctx, "shell", json.RawMessage(`{"command":"sleep 600"}`))
		}()
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		ra, wa := a.Stats()
		rb, wb := b.Stats()
		if ra+rb == 1 && wa+wb == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never 1 running and 1 waiting across both sessions: %d+%d running, %d+%d waiting", ra, rb, wa, wb)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The session with nothing waiting may wait one call past the full
	// queue (its reserve place); then each is refused.
	for _, s := range []*broker.Session{a, b} {
		if _, w := s.Stats(); w == 0 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s.Call(ctx, "read_file", json.RawMessage(`{"path":"hello.txt"}`))
			}()
			waitFor(t, "the reserve call waiting", func() bool { _, w := s.Stats(); return w == 1 })
		}
	}
	for name, s := range map[string]*broker.Session{"a": a, "b": b} {
		res := call(t, s, "read_file", `{"path":"hello.txt"}`)
		if !res.Refused() || !strings.Contains(res.Output.Content, "airlock is busy") || !strings.Contains(res.Output.Content, "across this server's sessions") {
			t.Errorf("session %s, a third call: %s %q", name, res.Class, res.Output.Content)
		}
	}
	cancel()
	wg.Wait()

	startWork(t, a, "sleep 600")
	res := call(t, b, "shell", `{"command":"sleep 600","run_in_background":true}`)
	if !res.Refused() || !strings.Contains(res.Output.Content, "1 background commands are already running across this server's sessions") {
		t.Errorf("a second session's background work past the shared budget: %s %q", res.Class, res.Output.Content)
	}
	id := a.Background()[0].ID
	workCall(t, a, "stop", id, "")
	// Its slot is free once the work has ended.
	startWork(t, b, "true")
}

// TestOneSessionCannotHoldAllBackground: of a shared budget, one session
// runs at most half of the background works, so another session can
// still start some; before, one client could hold all of them for their
// whole lifetime (hours) and refuse everyone else's (red team).
func TestOneSessionCannotHoldAllBackground(t *testing.T) {
	f := newFixture(t, grant.Limits{})
	adm := broker.NewAdmission(4, 4, 4)
	shared := func(o *broker.Options) { o.Admission, o.ToolRoot = adm, f.ws }
	a := f.open(t, sandboxtest.Unsandboxed(t), shared)
	b := f.open(t, sandboxtest.Unsandboxed(t), shared)
	startWork(t, a, "sleep 600")
	startWork(t, a, "sleep 600")
	res := call(t, a, "shell", `{"command":"sleep 600","run_in_background":true}`)
	if !res.Refused() || !strings.Contains(res.Output.Content, "this session already runs 2 background commands, the most one session may of the 4 allowed across this server's sessions") {
		t.Errorf("a third background work of one session: %s %q", res.Class, res.Output.Content)
	}
	startWork(t, b, "sleep 600")
	startWork(t, b, "sleep 600")
	// One of a's ends: a may start one again.
	workCall(t, a, "stop", a.Background()[0].ID, "")
	startWork(t, a, "true")
}

// TestSharedAdmissionIsFair: one session may take every call slot of a
// shared budget while no one else waits, and half its queue, but not
// more; a session with nothing waiting may wait one call past a full
// queue; a slot that frees goes to that session's waiting call before the
// others', which waited longer. Before, one session's calls held every
// slot and every queue place, and another's call waited behind all of
// them (red team).
func TestSharedAdmissionIsFair(t *testing.T) {
	f := newFixture(t, grant.Limits{})
	adm := broker.NewAdmission(2, 8, 1)
	shared := func(o *broker.Options) { o.Admission, o.ToolRoot = adm, f.ws }
	a := f.open(t, sandboxtest.Unsandboxed(t), shared)
	b := f.open(t, sandboxtest.Unsandboxed(t), shared)
	stats := func(s *broker.Session, running, waiting int) func() bool {
		return func() bool { r, w := s.Stats(); return r == running && w == waiting }
	}

	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	sleep := func(ctx context.Context, s *broker.Session) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.Call(ctx, "shell", json.RawMessage(`{"command":"sleep 600"}`))
		}()
	}
	first, cancelFirst := context.WithCancel(context.Background())
	rest, cancelRest := context.WithCancel(context.Background())
	t.Cleanup(cancelFirst)
	t.Cleanup(cancelRest)
	sleep(first, a)
	sleep(rest, a)
	waitFor(t, "a alone running both slots", stats(a, 2, 0))
	for i := range 4 {
		sleep(rest, a)
		waitFor(t, "a's calls queued", stats(a, 2, i+1))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	res, err := a.Call(ctx, "read_file", json.RawMessage(`{"path":"hello.txt"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Refused() || !strings.Contains(res.Output.Content, "this session already has 4 calls waiting, the most one session may of the 8 places across this server's sessions") {
		t.Errorf("a session's call past half the queue: %s %q", res.Class, res.Output.Content)
	}

	// A third session fills the rest of the queue.
	c := f.open(t, sandboxtest.Unsandboxed(t), shared)
	for i := range 4 {
		sleep(rest, c)
		waitFor(t, "c's calls queued", stats(c, 0, i+1))
	}

	// b, with nothing waiting, may still wait one call past the full
	// queue, and not two.
	done := make(chan *broker.Result, 1)
	go func() {
		res, _ := b.Call(context.Background(), "read_file", json.RawMessage(`{"path":"hello.txt"}`))
		done <- res
	}()
	waitFor(t, "b's call waiting", stats(b, 0, 1))
	if res := call(t, b, "read_file", `{"path":"hello.txt"}`); !res.Refused() || !strings.Contains(res.Output.Content, "8 more are waiting") {
		t.Errorf("b's second call past a full queue: %s %q", res.Class, res.Output.Content)
	}
	cancelFirst()
	select {
	case res := <-done:
		if res.Class != broker.ClassOK {
			t.Fatalf("b's call: %s %q", res.Class, res.Output.Content)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the freed slot went to a's queue, not to b's waiting call")
	}
	// b's call done, its slot goes to c, which runs none, before a.
	waitFor(t, "c's queue moving on", stats(c, 1, 3))
	waitFor(t, "a's queue still", stats(a, 1, 4))
}

// waitFor polls cond until it holds, failing after a generous deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
