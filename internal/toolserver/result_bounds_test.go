package toolserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

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

