package toolserver_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/toolserver"
)

// hostileHands serves a fake tool-server on loopback: it welcomes a broker
// and hands every later frame to play, which may answer anything.
func hostileHands(t *testing.T, play func(ctx context.Context, f *toolserver.Frame, send func(*toolserver.Frame))) string {
	t.Helper()
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
		c.SetReadLimit(-1)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		send := func(f *toolserver.Frame) {
			p, err := toolserver.EncodeFrame(f)
			if err != nil {
				t.Error(err)
				return
			}
			_ = c.Write(ctx, websocket.MessageBinary, p)
		}
		if _, _, err := c.Read(ctx); err != nil {
			return
		}
		send(&toolserver.Frame{Type: toolserver.TypeControl, Control: &toolserver.Control{
			Op: toolserver.OpWelcome, Version: toolserver.Version, Identity: "hostile", HeartbeatMS: 200}})
		go func() { // heartbeats, so the broker keeps the link
			for seq := int64(1); ctx.Err() == nil; seq++ {
				send(&toolserver.Frame{Type: toolserver.TypeHeartbeat, Heartbeat: &toolserver.Heartbeat{Seq: seq}})
				time.Sleep(100 * time.Millisecond)
			}
		}()
		for {
			_, b, err := c.Read(ctx)
			if err != nil {
				return
			}
			f, err := toolserver.DecodeFrame(b)
			if err != nil {
				return
			}
			if f.Type == toolserver.TypeCall {
				go play(ctx, f, send)
			}
		}
	})}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return "ws://" + ln.Addr().String()
}

func heapInUse() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// TestHostileHandsCannotFloodBrokerMemory: the broker bounds what hands may
// make it hold of a command's output. Hands that send output chunks the
// call's own output cap never allows, out of sequence (a gap at seq 0, so
// nothing is ever written and everything waits) or past the cap, must not
// grow the broker's memory without bound: it drops the link, and the call
// ends as lost. Before, every such chunk waited in the broker's memory for
// the call's lifetime.
func TestHostileHandsCannotFloodBrokerMemory(t *testing.T) {
	const chunk = 1 << 20
	const chunks = 160
	for _, tc := range []struct {
		name  string
		first int64 // the seq of the first chunk sent
	}{
		{"out of sequence", 1},
		{"past the cap", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sent := make(chan struct{})
			url := hostileHands(t, func(ctx context.Context, f *toolserver.Frame, send func(*toolserver.Frame)) {
				data := []byte(strings.Repeat("x", chunk))
				for i := range int64(chunks) {
					send(&toolserver.Frame{Type: toolserver.TypeOutput, ID: f.ID, Output: &toolserver.Chunk{Seq: tc.first + i, Stream: 1, Data: data}})
				}
				close(sent)
				<-ctx.Done() // and never a result
			})
			b, err := toolserver.New(context.Background(), &toolserver.Options{Endpoint: url, Token: testToken, Heartbeat: 200 * time.Millisecond, MaxBackoff: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })

			before := heapInUse()
			spec := &sandbox.Spec{Command: []string{"/bin/yes"}, Cwd: "/", Stdout: slowWriter{}, Stderr: io.Discard}
			spec.Limits.OutputBytes = 1 << 20
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			done := make(chan error, 1)
			go func() { _, err := b.Run(ctx, spec); done <- err }()

			var runErr error
			select {
			case <-sent:
				// Every chunk is in; whatever the broker kept of them is
				// still in its heap while the call runs.
				time.Sleep(200 * time.Millisecond)
				if grew := int64(heapInUse()) - int64(before); grew > 32<<20 {
					t.Errorf("the broker holds %d MiB more after the hands sent %d MiB of output to a call capped at 1 MiB", grew>>20, chunks*chunk>>20)
				}
				select {
				case runErr = <-done:
				case <-time.After(30 * time.Second):
					t.Fatal("the call still waits on hands that broke its output's bounds")
				}
			case runErr = <-done:
			}
			if !errors.Is(runErr, sandbox.ErrLost) {
				t.Fatalf("Run: %v, want the call lost with the hands that broke its bounds", runErr)
			}
		})
	}
}

// slowWriter is a command's stdout that takes its time, as a terminal or a
// full pipe does.
type slowWriter struct{}

func (slowWriter) Write(p []byte) (int, error) {
	time.Sleep(50 * time.Millisecond)
	return len(p), nil
}
