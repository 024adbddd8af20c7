package toolserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/toolserver"
	"github.com/airlockhq/airlock/wire"
)

// TestHostileHandsCannotPassAToolCallsOutputCap: the broker bounds a tool
// call's answer from the hands as it bounds a command's output. A local
// sandbox's stdout is cut at the call's cap (Spec.Limits.OutputBytes, which
// the broker sends with the call and honest hands apply); hands that answer
// with more than that ignore the cap, and the answer must not reach the
// model. Before, the broker took a runner frame of any size the link
// carries (up to 48 MiB) and handed all its content to the model, whatever
// the grant's output limit.
func TestHostileHandsCannotPassAToolCallsOutputCap(t *testing.T) {
	const capBytes = 1 << 20
	content := strings.Repeat("x", 8<<20)
	out, err := json.Marshal(wire.ToolOutput{Content: content})
	if err != nil {
		t.Fatal(err)
	}
	var frame bytes.Buffer
	if err := wire.WriteFrame(&frame, out); err != nil {
		t.Fatal(err)
	}
	url := hostileHands(t, func(ctx context.Context, f *toolserver.Frame, send func(*toolserver.Frame)) {
		send(&toolserver.Frame{Type: toolserver.TypeResult, ID: f.ID, Result: &toolserver.Result{Stdout: frame.Bytes()}})
	})
	b, err := toolserver.New(context.Background(), &toolserver.Options{Endpoint: url, Token: testToken, Heartbeat: 200 * time.Millisecond, MaxBackoff: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })

	in, err := json.Marshal(wire.ToolInput{Tool: "write_file", Args: json.RawMessage(`{"path":"/x","content":"y"}`), Context: wire.CallContext{CallID: "call_bounds"}})
	if err != nil {
		t.Fatal(err)
	}
	var stdin, stdout bytes.Buffer
	if err := wire.WriteFrame(&stdin, in); err != nil {
		t.Fatal(err)
	}
	spec := &sandbox.Spec{Cwd: "/", Stdin: &stdin, Stdout: &stdout}
	spec.Limits.OutputBytes = capBytes
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, err = b.Run(ctx, spec)
	if stdout.Len() > capBytes {
		t.Errorf("the broker took %d bytes of a tool call's output from the hands, past the call's cap of %d", stdout.Len(), capBytes)
	}
	if !errors.Is(err, sandbox.ErrLost) {
		t.Errorf("Run: %v, want the call lost with the hands that broke its output cap", err)
	}
}

// TestLargeToolResultReachesTheBroker: a tool call's answer always fits
// the frame that carries it back. With both grants letting a shell call
// return 60 MiB, a command printing 52 MB made a runner frame the hands'
// sandbox let through, but whose result frame (the stdout in base64, a
// third larger) passed the link's 64 MiB: the hands could not send it, and
// the broker's call waited for an answer that never came, holding its
// slot, until its caller gave up. The sandbox chose the size, so any call
// could wedge its session this way. Now the hands cut a tool call's
// output to what a result frame carries, and the model reads it cut.
func TestLargeToolResultReachesTheBroker(t *testing.T) {
	w := newWorkspace(t)
	g, err := grant.Parse([]byte(`[paths]
read_write = ["`+w.root+`"]
[limits]
output = "60MiB"
memory = "2GiB"
`), "big.toml", w.root)
	if err != nil {
		t.Fatal(err)
	}
	w.grant = g
	srv, url := serveWith(t, &toolserver.ServerOptions{Grant: g, Heartbeat: 5 * time.Second})
	// A slow heartbeat: the point is the size of the answer, not liveness.
	s := w.session(t, remoteBeating(t, url, nil, 5*time.Second))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type answer struct {
		res *broker.Result
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := s.Call(ctx, "shell", json.RawMessage(`{"command":"head -c 52000000 /dev/zero | tr '\\0' x"}`))
		done <- answer{res, err}
	}()
	// The hands ran the call and are done with it; its answer must follow.
	waitFor(t, "the hands to run the call", func() bool { return srv.Runs() == 1 && srv.Running() == 0 })
	var a answer
	select {
	case a = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("the hands ran the call, and the broker still waits for its answer")
	}
	if a.err != nil {
		t.Fatal(a.err)
	}
	if a.res.Class == broker.ClassCancelled || a.res.Class == broker.ClassLost {
		t.Errorf("class %s: %s", a.res.Class, a.res.Output.Content[:min(len(a.res.Output.Content), 300)])
	}
	if !a.res.Output.Truncated {
		t.Errorf("%d bytes of a 52 MB output reached the model, not marked as cut", len(a.res.Output.Content))
	}
}
