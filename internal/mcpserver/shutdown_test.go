package mcpserver_test

import (
	"context"
	"github.com/airlockhq/airlock/internal/sandboxtest"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/broker"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// callAsync calls a tool in the background.
func callAsync(cs *mcp.ClientSession, name string, args map[string]any) <-chan *mcp.CallToolResult {
	c := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			res = &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "protocol error: " + err.Error()}}}
		}
		c <- res
	}()
	return c
}

func TestShutdownWaitsForCalls(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			f := newFixture(t, nil, nil)
			a, b := tr.connect(t, f, nil), tr.connect(t, f, nil)
			call(t, b, "glob", map[string]any{"pattern": "*"}) // b's session is open
			// The call runs until the test has seen the server draining.
			gate, open := untilFile(t, f.root)
			running := callAsync(a, "shell", map[string]any{"command": gate + "; echo done"})
			eventually(t, time.Minute, "the call to run", func() bool { return hasLine(metrics(t, f.srv), "airlock_calls_running 1") })

			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			shut := make(chan error, 1)
			go func() { shut <- f.srv.Shutdown(ctx) }()
			eventually(t, time.Minute, "draining", func() bool {
				res := call(t, b, "glob", map[string]any{"pattern": "*"})
				return res.IsError && strings.Contains(text(t, res), "shutting down")
			})
			open()
			res := <-running
			got := text(t, res)
			// Over HTTP the go-sdk client fails a call whose session's
			// standalone stream ends first (it retries that stream no
			// more); the call still finished on the server: its record says.
			lostStream := tr.name == "http" && strings.HasPrefix(got, "protocol error") && strings.Contains(got, "standalone SSE stream")
			if !lostStream && (res.IsError || !strings.Contains(got, "done")) {
				t.Errorf("the call in flight: isError=%v %q, want it to finish", res.IsError, got)
			}
			if err := <-shut; err != nil {
				t.Errorf("Shutdown: %v, want nil (every call finished in time)", err)
			}
			if lostStream {
				finished := false
				for _, r := range auditRecords(t, f.records) {
					if r["kind"] == "call" && r["tool"] == "shell" && r["class"] == "ok" {
						finished = true
					}
				}
				if !finished {
					t.Errorf("the call in flight: the client saw %q and no ok record of it exists", got)
				}
			}
		})
	}
}

func TestShutdownStopsCallsAtDeadline(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			f := newFixture(t, sandboxtest.Native(t), nil)
			cs := tr.connect(t, f, nil)
			running := callAsync(cs, "shell", map[string]any{"command": "sleep 600"})
			eventually(t, time.Minute, "the call to run", func() bool { return hasLine(metrics(t, f.srv), "airlock_calls_running 1") })

			ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
			defer cancel()
			start := time.Now()
			if err := f.srv.Shutdown(ctx); err == nil {
				t.Error("Shutdown: nil, want the deadline's error")
			}
			// It returned at its deadline, not with the 600 s command (a
			// minute no loaded machine misses, and far from 600 s).
			if d := time.Since(start); d > time.Minute {
				t.Errorf("Shutdown took %v", d)
			}
			select {
			case res := <-running:
				// Over HTTP the end of the session's standalone stream may
				// reach the client before the result on the call's own
				// stream; either way the client learns at once.
				if got := text(t, res); !res.IsError && !strings.HasPrefix(got, "protocol error") {
					t.Errorf("the stopped call: %q, want isError", got)
				}
			case <-time.After(time.Minute):
				t.Fatal("the stopped call never returned to the client")
			}
			var classes []string
			for _, r := range auditRecords(t, f.records) {
				if r["kind"] == "call" {
					classes = append(classes, r["class"].(string))
				}
			}
			if len(classes) != 1 || classes[0] != string(broker.ClassCancelled) {
				t.Errorf("audited calls %v, want one %q", classes, broker.ClassCancelled)
			}
		})
	}
}
