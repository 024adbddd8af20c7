package toolserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/toolserver"
	"github.com/airlockhq/airlock/wire"
)

// TestCloseEndsCallsWaitingForAConnection: closing the backend ends every
// call, those waiting for a connection included. A call made while the
// link was down waited for the next connection within its own context;
// Close settled only the calls sent on the last link, so with the hands
// gone for good, a call under a context without a deadline waited for
// ever after Close, and so did whatever held it (a session's Close
// waiting for its calls).
func TestCloseEndsCallsWaitingForAConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var up bool
	retrying := make(chan struct{})
	hs := &http.Server{Handler: http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if up {
			select {
			case <-retrying:
			default:
				close(retrying) // the broker lost its link and reconnects
			}
			http.Error(rw, "gone", http.StatusServiceUnavailable) // the hands are gone from now on
			return
		}
		up = true
		c, err := websocket.Accept(rw, r, nil)
		if err != nil {
			return
		}
		ctx := context.Background()
		if _, _, err := c.Read(ctx); err != nil {
			return
		}
		p, _ := toolserver.EncodeFrame(&toolserver.Frame{Type: toolserver.TypeControl, Control: &toolserver.Control{
			Op: toolserver.OpWelcome, Version: toolserver.Version, Identity: "once"}})
		_ = c.Write(ctx, websocket.MessageBinary, p)
		c.CloseNow() // and gone
	})}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	b, err := toolserver.New(context.Background(), &toolserver.Options{
		Endpoint: "ws://" + ln.Addr().String(), Token: testToken, Heartbeat: testHeartbeat, MaxBackoff: 100 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	in, _ := json.Marshal(wire.ToolInput{Tool: "read_file", Args: json.RawMessage(`{"path":"/a"}`), Context: wire.CallContext{CallID: "call_waiting"}})
	var stdin bytes.Buffer
	if err := wire.WriteFrame(&stdin, in); err != nil {
		t.Fatal(err)
	}
	<-retrying
	done := make(chan error, 1)
	go func() {
		_, err := b.Run(context.Background(), &sandbox.Spec{Cwd: "/", Stdin: &stdin, Stdout: &bytes.Buffer{}})
		done <- err
	}()
	// Let the call start waiting for a connection before Close: nothing
	// outside the backend shows it waiting. A Close that comes first
	// refuses the call, which passes too.
	time.Sleep(300 * time.Millisecond)
	closed := make(chan struct{})
	go func() { b.Close(); close(closed) }()
	<-closed
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a call with no hands to run it succeeded")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the backend is closed, and a call made while its link was down still waits")
	}
}
