package toolserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/toolserver"
	"github.com/airlockhq/airlock/wire"
)

// TestSilentHandsCannotHoldACallPastItsWallTime: hands that keep the
// connection alive (heartbeats) and never answer a call cannot hold it past
// the call's wall time. A local sandbox is killed at its wall time; the
// broker took the hands' word for it, and waited for their answer as long
// as the caller's context lived: for background work (whose context ends
// only with the session) and for a caller without a deadline, for ever,
// holding its admission slot and, on Close, the session.
func TestSilentHandsCannotHoldACallPastItsWallTime(t *testing.T) {
	url := hostileHands(t, func(ctx context.Context, f *toolserver.Frame, send func(*toolserver.Frame)) {
		<-ctx.Done() // a call taken, and never an answer
	})
	b, err := toolserver.New(context.Background(), &toolserver.Options{
		Endpoint: url, Token: testToken, Heartbeat: 200 * time.Millisecond, MaxBackoff: time.Hour,
		AnswerGrace: 500 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })

	for _, tc := range []struct {
		name string
		spec func() *sandbox.Spec
	}{
		{"tool call", func() *sandbox.Spec {
			in, _ := json.Marshal(wire.ToolInput{Tool: "read_file", Args: json.RawMessage(`{"path":"/a"}`), Context: wire.CallContext{CallID: "call_silent"}})
			var stdin bytes.Buffer
			if err := wire.WriteFrame(&stdin, in); err != nil {
				t.Fatal(err)
			}
			return &sandbox.Spec{Cwd: "/", Stdin: &stdin, Stdout: io.Discard, Stderr: io.Discard}
		}},
		{"command", func() *sandbox.Spec {
			return &sandbox.Spec{Command: []string{"sleep", "1"}, Cwd: "/", Stdout: io.Discard, Stderr: io.Discard}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := tc.spec()
			spec.Limits.Wall = time.Second
			done := make(chan error, 1)
			go func() { _, err := b.Run(context.Background(), spec); done <- err }()
			select {
			case err := <-done:
				if !errors.Is(err, sandbox.ErrLost) {
					t.Fatalf("Run: %v, want the call lost: the hands never answered it", err)
				}
			case <-time.After(60 * time.Second):
				t.Fatal("a call of 1 s wall time still waits a minute on hands that never answer it")
			}
		})
	}
}

// TestHandsCannotClaimOutputTheyNeverSent: a command's result says how many
// output chunks came before it, on the same ordered connection, and the
// broker waits for them to be written. Hands claiming chunks they never
// sent held Run until the caller's context ended (never, for background
// work): the broker now takes such a result for a broken promise, drops
// the link, and the call ends as lost.
func TestHandsCannotClaimOutputTheyNeverSent(t *testing.T) {
	url := hostileHands(t, func(ctx context.Context, f *toolserver.Frame, send func(*toolserver.Frame)) {
		send(&toolserver.Frame{Type: toolserver.TypeOutput, ID: f.ID, Output: &toolserver.Chunk{Seq: 0, Stream: 1, Data: []byte("one\n")}})
		send(&toolserver.Frame{Type: toolserver.TypeResult, ID: f.ID, Result: &toolserver.Result{Chunks: 1 << 40}})
		<-ctx.Done()
	})
	b, err := toolserver.New(context.Background(), &toolserver.Options{Endpoint: url, Token: testToken, Heartbeat: 200 * time.Millisecond, MaxBackoff: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	done := make(chan error, 1)
	go func() {
		_, err := b.Run(context.Background(), &sandbox.Spec{Command: []string{"echo", "one"}, Cwd: "/", Stdout: io.Discard, Stderr: io.Discard})
		done <- err
	}()
	select {
	case err := <-done:
		if !errors.Is(err, sandbox.ErrLost) {
			t.Fatalf("Run: %v, want the call lost with hands that claimed output they never sent", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("Run still waits for output chunks the hands claimed and never sent")
	}
}
