package broker_test

import (
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/sandboxtest"
)

// TestBackgroundWaitKeepsTheTimeLimit: a wait is a call, and a call answers
// within the grant's time limit. background_command's wait waited its
// wait_secs (600 by default) whatever the limit: under a 1 s limit a wait
// on work that kept running held the call, its in-flight mark and the
// model's turn for ten minutes.
func TestBackgroundWaitKeepsTheTimeLimit(t *testing.T) {
	f := newFixture(t, grant.Limits{Time: time.Second})
	s := f.open(t, sandboxtest.Native(t), nil)
	id := startWork(t, s, "sleep 600")
	t.Cleanup(func() { workCall(t, s, "stop", id, "") })
	done := make(chan *broker.Result, 1)
	go func() { done <- call(t, s, "background_command", `{"operation":"wait","work_id":"`+id+`"}`) }()
	select {
	case res := <-done:
		out := res.Output
		if out.Meta.WorkState != string(broker.WorkRunning) || !strings.Contains(out.Content, "time limit") {
			t.Errorf("wait: state %q, content %q", out.Meta.WorkState, out.Content)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the wait held its call past a minute under a time limit of 1s")
	}
}
