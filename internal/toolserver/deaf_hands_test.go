package toolserver_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/toolserver"
)

// zeros is a stdin that never ends.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestDeafHandsCannotHoldACall: hands that welcome the broker, keep
// heartbeating and read nothing more cannot hold a call past its wall time,
// nor its cancel. A command's stdin filled the connection, and the cancel
// the broker sends a call it gives up on waited to be written as long as
// the link lived, with Run waiting on it: for ever.
func TestDeafHandsCannotHoldACall(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		c, err := websocket.Accept(rw, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		ctx := r.Context()
		if _, _, err := c.Read(ctx); err != nil {
			return
		}
		p, _ := toolserver.EncodeFrame(&toolserver.Frame{Type: toolserver.TypeControl, Control: &toolserver.Control{
			Op: toolserver.OpWelcome, Version: toolserver.Version, Identity: "deaf", HeartbeatMS: 200}})
		_ = c.Write(ctx, websocket.MessageBinary, p)
		for seq := int64(1); ctx.Err() == nil; seq++ { // alive, and deaf: never a read
			p, _ := toolserver.EncodeFrame(&toolserver.Frame{Type: toolserver.TypeHeartbeat, Heartbeat: &toolserver.Heartbeat{Seq: seq}})
			if c.Write(ctx, websocket.MessageBinary, p) != nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	b, err := toolserver.New(context.Background(), &toolserver.Options{
		Endpoint: "ws://" + ln.Addr().String(), Token: testToken, Heartbeat: 200 * time.Millisecond, MaxBackoff: time.Hour,
		AnswerGrace: 500 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	spec := &sandbox.Spec{Command: []string{"cat"}, Cwd: "/", Stdin: zeros{}, Stdout: io.Discard, Stderr: io.Discard}
	spec.Limits.Wall = time.Second
	done := make(chan error, 1)
	go func() { _, err := b.Run(context.Background(), spec); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, sandbox.ErrLost) {
			t.Fatalf("Run: %v, want the call lost: the hands never answered it", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("a call of 1 s wall time still waits a minute on hands that read nothing")
	}
}
