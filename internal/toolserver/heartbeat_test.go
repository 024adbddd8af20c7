package toolserver_test

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/airlockhq/airlock/internal/sandboxtest"
	"github.com/airlockhq/airlock/internal/toolserver"
)

// hello sends a hello announcing heartbeat to the hands at url and returns
// their answer.
func hello(t *testing.T, url string, heartbeat time.Duration) *toolserver.Frame {
	t.Helper()
	c, _, err := websocket.Dial(context.Background(), url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + testToken}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	p, _ := toolserver.EncodeFrame(&toolserver.Frame{Type: toolserver.TypeControl, Control: &toolserver.Control{
		Op: toolserver.OpHello, Versions: []int{toolserver.Version}, HeartbeatMS: heartbeat.Milliseconds()}})
	if err := c.Write(context.Background(), websocket.MessageBinary, p); err != nil {
		t.Fatal(err)
	}
	_, b, err := c.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	f, err := toolserver.DecodeFrame(b)
	if err != nil {
		t.Fatalf("answer %s: %v", b, err)
	}
	return f
}

// TestHeartbeatCapped: the longer of both heartbeat intervals sets when a
// silent peer is taken for dead, so neither side accepts the other's
// beyond MaxHeartbeat: a broker announcing an interval of days would keep
// its sandboxes alive on the hands for days after the link went half-open.
func TestHeartbeatCapped(t *testing.T) {
	w := newWorkspace(t)
	_, url := inProcess(t, w)

	if f := hello(t, url, toolserver.MaxHeartbeat); f.Control == nil || f.Control.Op != toolserver.OpWelcome {
		t.Fatalf("a hello at MaxHeartbeat got %+v, want a welcome", f)
	}
	f := hello(t, url, 1000*time.Hour)
	if f.Control == nil || f.Control.Op != toolserver.OpError || !strings.Contains(f.Control.Message, "the most these hands accept is "+toolserver.MaxHeartbeat.String()) {
		t.Fatalf("a hello with a heartbeat of 1000h got %+v, want an error naming the most accepted", f.Control)
	}

	// Hands announcing a heartbeat past the cap are refused by the broker.
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
		if _, _, err := c.Read(r.Context()); err != nil {
			return
		}
		p, _ := toolserver.EncodeFrame(&toolserver.Frame{Type: toolserver.TypeControl, Control: &toolserver.Control{
			Op: toolserver.OpWelcome, Version: toolserver.Version, Identity: "slow", HeartbeatMS: (1000 * time.Hour).Milliseconds()}})
		_ = c.Write(r.Context(), websocket.MessageBinary, p)
		_, _, _ = c.Read(r.Context())
	})}
	go hs.Serve(ln)
	defer hs.Close()
	_, err = toolserver.New(context.Background(), &toolserver.Options{Endpoint: "ws://" + ln.Addr().String(), Token: testToken})
	if err == nil || !strings.Contains(err.Error(), "the most this broker accepts is "+toolserver.MaxHeartbeat.String()) {
		t.Fatalf("hands with a heartbeat of 1000h: %v, want a refusal naming the most accepted", err)
	}

	// Neither end may be set up with an interval past the cap either.
	if _, err := toolserver.NewServer(&toolserver.ServerOptions{Grant: w.grant, Backend: sandboxtest.Native(t), Heartbeat: 2 * toolserver.MaxHeartbeat}); err == nil {
		t.Error("NewServer took a heartbeat past MaxHeartbeat")
	}
	if _, err := toolserver.New(context.Background(), &toolserver.Options{Endpoint: url, Token: testToken, Heartbeat: 2 * toolserver.MaxHeartbeat}); err == nil {
		t.Error("New took a heartbeat past MaxHeartbeat")
	}
}
