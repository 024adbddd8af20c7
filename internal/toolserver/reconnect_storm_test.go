package toolserver_test

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/airlockhq/airlock/internal/toolserver"
)

// TestFlappingHandsBackOff: hands that welcome a broker and drop the
// connection at once, every time (a pod killed as it starts, a container
// that dies on its first frame), are reconnected to with a growing wait,
// not at the first step of the backoff again and again. Before, a
// welcome reset the backoff, so the broker reconnected every 25 to 50 ms
// for as long as the hands flapped: for a kube:// endpoint a new pod each
// time, for stdio a new process.
func TestFlappingHandsBackOff(t *testing.T) {
	const want = 8
	var mu sync.Mutex
	var at []time.Time
	enough := make(chan struct{})
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
		ctx := context.Background()
		if _, _, err := c.Read(ctx); err != nil { // the hello
			return
		}
		p, err := toolserver.EncodeFrame(&toolserver.Frame{Type: toolserver.TypeControl, Control: &toolserver.Control{
			Op: toolserver.OpWelcome, Version: toolserver.Version, Identity: "flapping"}})
		if err != nil {
			t.Error(err)
			return
		}
		_ = c.Write(ctx, websocket.MessageBinary, p)
		mu.Lock()
		at = append(at, time.Now())
		if len(at) == want {
			close(enough)
		}
		mu.Unlock()
		// and the connection ends at once
	})}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })

	b, err := toolserver.New(context.Background(), &toolserver.Options{
		Endpoint: "ws://" + ln.Addr().String(), Token: testToken,
		Heartbeat: testHeartbeat, MaxBackoff: 10 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	<-enough
	mu.Lock()
	defer mu.Unlock()
	// After want-1 links that each died at once, the wait before the next
	// is at least half of 50 ms doubled want-2 times: the backoff grew.
	least := 50 * time.Millisecond << (want - 2) / 2
	if gap := at[want-1].Sub(at[want-2]); gap < least {
		t.Errorf("connection %d came %s after connection %d to hands that drop every connection at once, want at least %s of backoff", want, gap, want-1, least)
	}
}
