package toolserver_test

import (
	"context"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/airlockhq/airlock/internal/toolserver"
)

// TestHandsBoundStdinAhead: a command's stdin chunks that arrive ahead of
// their turn wait on the hands, and an empty one costs the queue no byte:
// the bound on queued stdin must hold for them too. A broker sending
// endless empty chunks past a gap (seq 1, 2, 3... and never 0) kept every
// one of them in the hands' memory for the command's lifetime; the hands
// now kill the command once chunks run too far ahead.
func TestHandsBoundStdinAhead(t *testing.T) {
	w := newWorkspace(t)
	be := newBlockingBackend()
	_, url := serveWith(t, &toolserver.ServerOptions{Grant: w.grant, Backend: be})
	c := rawBroker(t, url, testHeartbeat)
	sendFrame(t, c, &toolserver.Frame{Type: toolserver.TypeCall, ID: "call_in", Call: &toolserver.Call{
		Command: []string{"/bin/cat"}, Cwd: w.root, Stdin: true}})
	select {
	case <-be.started:
	case <-time.After(30 * time.Second):
		t.Fatal("the command never started")
	}
	beat := make(chan struct{})
	defer close(beat)
	go func() { // a live broker: heartbeats all along
		for seq := int64(1); ; seq++ {
			select {
			case <-beat:
				return
			case <-time.After(50 * time.Millisecond):
			}
			p, _ := toolserver.EncodeFrame(&toolserver.Frame{Type: toolserver.TypeHeartbeat, Heartbeat: &toolserver.Heartbeat{Seq: seq}})
			_ = c.Write(context.Background(), websocket.MessageBinary, p)
		}
	}()
	start := heapInUse()
	const n = 100000
	for seq := int64(1); seq <= n; seq++ {
		sendFrame(t, c, &toolserver.Frame{Type: toolserver.TypeInput, ID: "call_in", Input: &toolserver.Chunk{Seq: seq}})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	select {
	case <-be.stopped:
		return // killed, as it must be
	case <-ctx.Done():
	}
	grew := int64(heapInUse()) - int64(start)
	t.Fatalf("%d empty stdin chunks ahead of their turn left the command running, the hands holding %d KiB more", n, grew>>10)
}
