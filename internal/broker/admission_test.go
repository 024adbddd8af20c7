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
// two of them run no more calls, queue no more and keep no more
// background work than one alone may: past it a call of either is refused
// at once, saying the budget is the server's.
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
