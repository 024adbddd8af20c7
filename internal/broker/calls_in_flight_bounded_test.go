package broker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/sandboxtest"
	"github.com/airlockhq/airlock/wire"
)

// openFiles counts the test process's open descriptors.
func openFiles(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("cannot count open descriptors: %v", err)
	}
	return len(ents)
}

// A wait on background work takes no call slot (it runs nothing), so
// admission never bounds how many a session has at once; yet each holds an
// in-flight mark, an open file in the records directory, for as long as it
// waits (up to 600 s), and the session keeps the file open until it
// closes. A model that sends waits by the hundred (a 100-byte request
// each: the transport's 32 MiB of pending requests hold 300,000) took the
// broker's descriptors, and with them every other call's sandbox. Past a
// bound a call must be refused at once as busy, and the broker's
// descriptors must not grow with the number of waits.
func TestConcurrentWaitsAreBoundedPerSession(t *testing.T) {
	f := newFixture(t, grant.Limits{})
	s := f.open(t, sandboxtest.Unsandboxed(t), nil)
	id := startWork(t, s, "sleep 1000")
	const waits, most = 300, 200
	before := openFiles(t)

	ctx, cancel := context.WithCancel(context.Background())
	results := make(chan *broker.Result, waits)
	for range waits {
		go func() {
			res, err := s.Call(ctx, "background_command", json.RawMessage(fmt.Sprintf(`{"operation":"wait","work_id":%q,"wait_secs":600}`, id)))
			if err != nil {
				res = &broker.Result{Class: wire.Class("error: " + err.Error())}
			}
			results <- res
		}()
	}
	// Each wait either waits (holding what it holds) or is refused at once.
	refused := 0
	t.Cleanup(func() {
		cancel()
		for range waits - refused {
			<-results
		}
	})
	deadline := time.After(60 * time.Second)
	for refused < waits-most {
		select {
		case res := <-results:
			if res.Class != broker.ClassRefused {
				t.Fatalf("a wait on running work answered %s: %q", res.Class, res.Output.Content)
			}
			refused++
		case <-time.After(50 * time.Millisecond):
			if n := openFiles(t) - before; n >= most {
				t.Fatalf("with %d waits in flight on one session (%d refused) the broker holds %d more open descriptors: waits are not bounded", waits, refused, n)
			}
		case <-deadline:
			t.Fatalf("after 60 s only %d of %d waits were refused, and the broker holds %d more open descriptors", refused, waits, openFiles(t)-before)
		}
	}
}
