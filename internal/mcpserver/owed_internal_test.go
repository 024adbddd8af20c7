package mcpserver

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// scriptedConn reads the messages of in, then blocks until closed; it
// keeps nothing it is written.
type scriptedConn struct {
	in     chan jsonrpc.Message
	closed chan struct{}
}

func (c *scriptedConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case m := <-c.in:
		return m, nil
	case <-c.closed:
		return nil, io.EOF
	}
}
func (c *scriptedConn) Write(context.Context, jsonrpc.Message) error { return nil }
func (c *scriptedConn) Close() error                                 { close(c.closed); return nil }
func (c *scriptedConn) SessionID() string                            { return "" }

type scriptedTransport struct{ c *scriptedConn }

func (t scriptedTransport) Connect(context.Context) (mcp.Connection, error) { return t.c, nil }

// TestOwedAnswersAreCounted: Shutdown's wait for the answers in flight
// ends when the last answer is written (or its connection closes, after
// which none can be), not after a pause; a notification owes nothing.
func TestOwedAnswersAreCounted(t *testing.T) {
	var o owed
	sc := &scriptedConn{in: make(chan jsonrpc.Message, 4), closed: make(chan struct{})}
	conn, err := countedTransport{Transport: scriptedTransport{sc}, o: &o}.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	id1, _ := jsonrpc.MakeID(int64(1))
	id2, _ := jsonrpc.MakeID("two")
	sc.in <- &jsonrpc.Request{ID: id1, Method: "tools/call"}
	sc.in <- &jsonrpc.Request{ID: id2, Method: "tools/call"}
	sc.in <- &jsonrpc.Request{Method: "notifications/progress"}
	for range 3 {
		if _, err := conn.Read(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	waited := make(chan struct{})
	go func() { o.wait(time.Hour); close(waited) }()
	if err := conn.Write(context.Background(), &jsonrpc.Response{ID: id1}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-waited:
		t.Fatal("the wait ended with an answer still owed")
	default:
	}
	if err := conn.Write(context.Background(), &jsonrpc.Response{ID: id2}); err != nil {
		t.Fatal(err)
	}
	<-waited // the last answer is written: the wait ends

	// A connection that closes owes nothing more.
	id3, _ := jsonrpc.MakeID(int64(3))
	sc.in <- &jsonrpc.Request{ID: id3, Method: "tools/call"}
	if _, err := conn.Read(context.Background()); err != nil {
		t.Fatal(err)
	}
	waited = make(chan struct{})
	go func() { o.wait(time.Hour); close(waited) }()
	conn.Close()
	<-waited
}
