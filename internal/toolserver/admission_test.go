package toolserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/toolserver"
)

// TestHandsCapSandboxes: a tool-server runs at most MaxSandboxes sandboxes
// at once, whatever its brokers ask: one more call, command or tool call,
// is refused at once with a sentence naming the cap, and runs again once
// a sandbox has ended.
func TestHandsCapSandboxes(t *testing.T) {
	w := newWorkspace(t)
	srv, url := serveWith(t, &toolserver.ServerOptions{Grant: w.grant, MaxSandboxes: 2})
	b := remote(t, url, nil)

	// Two commands hold both sandboxes until cancelled.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 2)
	for i := range 2 {
		spec := broker.SpecFor(w.grant, w.grant.LimitsFor("shell"))
		spec.Command = []string{"/bin/sh", "-c", fmt.Sprintf("touch up%d; exec sleep 600", i)}
		go func() { _, err := b.Run(ctx, spec); done <- err }()
	}
	waitFor(t, "both commands to run", func() bool {
		_, e0 := os.Stat(filepath.Join(w.root, "up0"))
		_, e1 := os.Stat(filepath.Join(w.root, "up1"))
		return e0 == nil && e1 == nil
	})

	spec := broker.SpecFor(w.grant, w.grant.LimitsFor("shell"))
	spec.Command = []string{"/bin/true"}
	if _, err := b.Run(context.Background(), spec); err == nil || !strings.Contains(err.Error(), "2 sandboxes are running, the most these hands run at once") {
		t.Fatalf("a third command: %v, want a refusal naming the cap", err)
	}
	s := w.session(t, b)
	res, err := s.Call(context.Background(), "read_file", json.RawMessage(`{"path":"a.txt"}`))
	if err != nil {
		t.Fatal(err)
	}
	if res.Class != broker.ClassSandbox {
		t.Fatalf("a tool call past the cap: %s %q", res.Class, res.Output.Content)
	}
	if n := srv.Runs(); n != 2 {
		t.Fatalf("the hands started %d sandboxes, want 2", n)
	}

	cancel()
	for range 2 {
		<-done
	}
	waitFor(t, "the sandboxes to end", func() bool { return srv.Running() == 0 })
	res, err = s.Call(context.Background(), "read_file", json.RawMessage(`{"path":"a.txt"}`))
	if err != nil || res.Class != broker.ClassOK {
		t.Fatalf("a call once the sandboxes ended: %v %+v", err, res)
	}
}
