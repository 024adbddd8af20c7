package toolserver_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/toolserver"
	"github.com/airlockhq/airlock/wire"
)

// TestDeafBrokerCannotHoldASandboxPastItsWallTime: a broker that keeps its
// connection alive (heartbeats) and never reads what the hands send cannot
// keep a command's sandbox, and the hands' slot for it, past the command's
// wall time. The command's output filled the connection, the hands' write
// of it waited as long as the connection lived, and the sandbox waited for
// its output to be taken: for ever.
func TestDeafBrokerCannotHoldASandboxPastItsWallTime(t *testing.T) {
	w := newWorkspace(t)
	g, err := grant.Parse([]byte(`[paths]
read_write = ["`+w.root+`"]
[limits]
output = "1GiB"
`), "big.toml", w.root)
	if err != nil {
		t.Fatal(err)
	}
	srv, url := serveWith(t, &toolserver.ServerOptions{Grant: g, Heartbeat: 200 * time.Millisecond, OutputGrace: time.Second})
	c := rawBroker(t, url, 200*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // alive, and deaf: never a read
		for seq := int64(1); ctx.Err() == nil; seq++ {
			p, _ := toolserver.EncodeFrame(&toolserver.Frame{Type: toolserver.TypeHeartbeat, Heartbeat: &toolserver.Heartbeat{Seq: seq}})
			if c.Write(ctx, websocket.MessageBinary, p) != nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	sendFrame(t, c, &toolserver.Frame{Type: toolserver.TypeCall, ID: "call_deaf", Call: &toolserver.Call{
		Command: []string{"/bin/sh", "-c", "while :; do echo xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx; done"}, Cwd: w.root,
		Mounts: []sandbox.Mount{{Source: w.root}},
		Limits: toolserver.Limits{WallMS: 2000, OutputBytes: 1 << 30},
	}})
	waitFor(t, "the command's sandbox to start", func() bool { return srv.Running() > 0 })
	deadline := time.After(60 * time.Second)
	for srv.Running() > 0 {
		select {
		case <-deadline:
			t.Fatal("a command of 2 s wall time still holds its sandbox a minute on, its broker alive and not reading")
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// TestDeafBrokerLosesItsConnection: a broker that keeps heartbeating and
// never reads loses its connection once a frame to it has waited past the
// time its size allows, whatever the frame. A tool call's result (its slot
// already free) waited to be written for ever, each holding its frame, up
// to 64 MiB: a deaf broker asking again and again grew the hands' memory
// without bound.
func TestDeafBrokerLosesItsConnection(t *testing.T) {
	w := newWorkspace(t)
	big := strings.Repeat("x", 16<<20)
	if err := os.WriteFile(filepath.Join(w.root, "big.txt"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := grant.Parse([]byte(`[paths]
read_write = ["`+w.root+`"]
[limits]
output = "40MiB"
memory = "2GiB"
`), "big.toml", w.root)
	if err != nil {
		t.Fatal(err)
	}
	srv, url := serveWith(t, &toolserver.ServerOptions{Grant: g, Heartbeat: 200 * time.Millisecond, OutputGrace: time.Second})
	c := rawBroker(t, url, 200*time.Millisecond)
	closed := make(chan struct{})
	go func() { // alive, and deaf: never a read
		defer close(closed)
		for seq := int64(1); ; seq++ {
			p, _ := toolserver.EncodeFrame(&toolserver.Frame{Type: toolserver.TypeHeartbeat, Heartbeat: &toolserver.Heartbeat{Seq: seq}})
			if err := c.Write(context.Background(), websocket.MessageBinary, p); err != nil {
				return // the hands ended the connection
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	for i := range 4 {
		id := fmt.Sprintf("call_deaf%d", i)
		sendFrame(t, c, &toolserver.Frame{Type: toolserver.TypeCall, ID: id, Call: &toolserver.Call{
			Input: &wire.ToolInput{Tool: "read_file", Args: []byte(`{"path":"` + w.root + `/big.txt","limit":1000000000}`), Context: wire.CallContext{CallID: id, Cwd: w.root, Limits: wire.ToolLimits{OutputBytes: 32 << 20, FileBytes: 32 << 20}}},
			Cwd:   w.root, Mounts: []sandbox.Mount{{Source: w.root}},
		}})
	}
	waitFor(t, "the calls to run", func() bool { return srv.Runs() >= 4 && srv.Running() == 0 })
	select {
	case <-closed:
	case <-time.After(60 * time.Second):
		t.Fatal("the hands still hold the results of a broker that has read nothing for a minute")
	}
}
