package toolserver_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/toolserver"
	"github.com/airlockhq/airlock/wire"
)

// blockingBackend is a sandbox backend whose every run lasts until its
// context ends: it records when each run started and when it was stopped.
type blockingBackend struct {
	started chan struct{}
	stopped chan time.Time
}

func newBlockingBackend() *blockingBackend {
	return &blockingBackend{started: make(chan struct{}, 16), stopped: make(chan time.Time, 16)}
}

func (b *blockingBackend) Run(ctx context.Context, spec *sandbox.Spec) (*sandbox.Result, error) {
	b.started <- struct{}{}
	<-ctx.Done()
	b.stopped <- time.Now()
	return &sandbox.Result{Signal: 9}, nil
}

func (b *blockingBackend) Report() sandbox.Report { return sandbox.Report{Backend: "blocking"} }

// rawBroker dials the hands at url as a broker would, says hello announcing
// heartbeat, and reads the welcome.
func rawBroker(t *testing.T, url string, heartbeat time.Duration) *websocket.Conn {
	t.Helper()
	c, _, err := websocket.Dial(context.Background(), url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + testToken}}})
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadLimit(-1)
	t.Cleanup(func() { c.CloseNow() })
	sendFrame(t, c, &toolserver.Frame{Type: toolserver.TypeControl, Control: &toolserver.Control{
		Op: toolserver.OpHello, Versions: []int{toolserver.Version}, HeartbeatMS: heartbeat.Milliseconds()}})
	_, b, err := c.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if f, err := toolserver.DecodeFrame(b); err != nil || f.Control == nil || f.Control.Op != toolserver.OpWelcome {
		t.Fatalf("answer to hello %s: %v", b, err)
	}
	return c
}

func sendFrame(t *testing.T, c *websocket.Conn, f *toolserver.Frame) {
	t.Helper()
	p, err := toolserver.EncodeFrame(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Write(context.Background(), websocket.MessageBinary, p); err != nil {
		t.Fatal(err)
	}
}

// TestBrokerGoneKillsItsSandboxesAtOnce: when a broker's connection ends
// (it closed, crashed, or its link dropped with a FIN or RST), the hands
// kill the sandboxes of that connection at once. Before, ServeConn waited
// for the calls before cancelling them, so they ran on until the hands'
// next heartbeat failed to go out (up to 30 s with --heartbeat 30s),
// holding their processes and the hands' sandbox slots all that time.
// Both a tool call and a command are checked.
func TestBrokerGoneKillsItsSandboxesAtOnce(t *testing.T) {
	w := newWorkspace(t)
	be := newBlockingBackend()
	_, url := serveWith(t, &toolserver.ServerOptions{Grant: w.grant, Backend: be, Heartbeat: toolserver.MaxHeartbeat})

	for _, call := range []*toolserver.Call{
		{Command: []string{"/bin/sleep", "600"}, Cwd: w.root},
		{Input: &wire.ToolInput{Tool: "read_file", Args: []byte(`{"path":"` + w.root + `/a.txt"}`), Context: wire.CallContext{CallID: "call_gone", Cwd: w.root}},
			Cwd: w.root, Mounts: []sandbox.Mount{{Source: w.root}}},
	} {
		c := rawBroker(t, url, toolserver.MaxHeartbeat)
		sendFrame(t, c, &toolserver.Frame{Type: toolserver.TypeCall, ID: "call_gone", Call: call})
		select {
		case <-be.started:
		case <-time.After(30 * time.Second):
			t.Fatal("the call never started on the hands")
		}
		gone := time.Now()
		c.CloseNow() // the broker goes away mid-call
		select {
		case at := <-be.stopped:
			t.Logf("sandbox stopped %s after the broker left", at.Sub(gone).Round(time.Millisecond))
		case <-time.After(20 * time.Second):
			t.Fatalf("the sandbox of a call whose broker left still runs after 20s (the hands wait for %d heartbeats of %s)", toolserver.DeadAfter, toolserver.MaxHeartbeat)
		}
	}
}
