package toolserver_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/toolserver"
)

// TestReplayedCommandRunsOnce: a command's call frame that reaches the
// hands again after the command has ended (something on the path that
// replays it, here on a connection of its own) does not run the command a
// second time. A tool call asked twice is answered from the record of its
// first run; a command was guarded only while it ran on its connection,
// so a replay after its end ran it again: an exec or background work that
// is not idempotent took effect twice, which the broker promises never to
// do to a call ("never silently re-run").
func TestReplayedCommandRunsOnce(t *testing.T) {
	w := newWorkspace(t)
	srv, url := inProcess(t, w)
	p := newFrameProxy(t, url)
	var mu sync.Mutex
	var call []byte
	p.setHook(func(toBroker bool, f *toolserver.Frame, b []byte, send func([]byte)) {
		if !toBroker && f.Type == toolserver.TypeCall {
			mu.Lock()
			call = b
			mu.Unlock()
		}
		send(b)
	})
	b := remote(t, p.url, nil)
	spec := broker.SpecFor(w.grant, w.grant.LimitsFor("shell"))
	spec.Command = []string{"/bin/sh", "-c", "echo run >> runs.log"}
	spec.Cwd = w.root
	res, err := b.Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 0 {
		t.Fatalf("exit %d", res.ExitCode)
	}

	// The command has ended; its frame comes again.
	ctx := context.Background()
	c, err := toolserver.DialWebSocket(ctx, url, testToken, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	send := func(f *toolserver.Frame) {
		t.Helper()
		b, err := toolserver.EncodeFrame(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Send(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	send(&toolserver.Frame{Type: toolserver.TypeControl, Control: &toolserver.Control{Op: toolserver.OpHello, Versions: []int{toolserver.Version}}})
	mu.Lock()
	replay := call
	mu.Unlock()
	if err := c.Send(ctx, replay); err != nil {
		t.Fatal(err)
	}
	for {
		b, err := c.Recv(ctx)
		if err != nil {
			t.Fatal(err)
		}
		f, err := toolserver.DecodeFrame(b)
		if err != nil {
			t.Fatal(err)
		}
		if f.Type == toolserver.TypeHeartbeat {
			send(&toolserver.Frame{Type: toolserver.TypeHeartbeat, Heartbeat: &toolserver.Heartbeat{Seq: 1}})
		}
		if f.Type == toolserver.TypeResult {
			t.Logf("the replay's answer: %+v", *f.Result)
			break
		}
	}
	got, _ := os.ReadFile(filepath.Join(w.root, "runs.log"))
	if n := strings.Count(string(got), "run"); n != 1 || srv.Runs() != 1 {
		t.Errorf("the command ran %d times for one call and a replay of its frame (%d sandboxes)", n, srv.Runs())
	}
}
