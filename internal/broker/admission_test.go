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
