package mcpserver_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/airlockhq/airlock/internal/sandboxtest"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// procsWith returns the pids of live (not zombie) processes whose command
// line contains marker.
func procsWith(marker string) []string {
	var pids []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(strings.ReplaceAll(string(cmdline), "\x00", " "), marker) {
			continue
		}
		stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if _, after, ok := strings.Cut(string(stat), ") "); ok && strings.HasPrefix(after, "Z") {
			continue
		}
		pids = append(pids, e.Name())
	}
	return pids
}

// killAll kills pids, so a failed test leaves nothing running.
func killAll(pids []string) {
	for _, p := range pids {
		if pid, err := strconv.Atoi(p); err == nil {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// testCancel cancels a running `sleep` and checks the call ends quickly, is
// audited as cancelled, and leaves no process behind.
func testCancel(t *testing.T, f *fixture, tr transport) {
	cs := tr.connect(t, f, nil)
	// A unique argument finds the sleep in /proc whatever its pid namespace.
	secs := fmt.Sprintf("600.%d", time.Now().UnixNano()%1e6)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "shell", Arguments: map[string]any{"command": "sleep " + secs}})
		errc <- err
	}()
	eventually(t, 15*time.Second, "the sleep to start", func() bool { return len(procsWith("sleep "+secs)) > 0 })
	start := time.Now()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("CallTool after cancel: %v, want context.Canceled", err)
	}
	// The server's side: the broker call ends, audited as cancelled.
	eventually(t, time.Minute, "the cancelled call to end", func() bool {
		return hasLine(metrics(t, f.srv), "airlock_calls_in_flight 0")
	})
	if m := metrics(t, f.srv); !hasLine(m, `airlock_calls_total{tool="shell",class="cancelled"} 1`) {
		t.Errorf("want one cancelled shell call in the metrics:\n%s", m)
	}
	// A cancelled call's sandbox did not fail: it is not counted as failed.
	eventually(t, time.Minute, "the sandbox run to be counted", func() bool {
		m := metrics(t, f.srv)
		return hasLine(m, `airlock_sandbox_runs_total{result="cancelled"} 1`) || hasLine(m, `airlock_sandbox_runs_total{result="started"} 1`) ||
			hasLine(m, `airlock_sandbox_runs_total{result="failed"} 1`)
	})
	if m := metrics(t, f.srv); !hasLine(m, `airlock_sandbox_runs_total{result="failed"} 0`) {
		t.Errorf("a cancelled call counted as a failed sandbox:\n%s", m)
	}
	// The call ended on the cancel, not with its 600 s command (a minute
	// is a window no loaded machine misses, and far from 600 s).
	if d := time.Since(start); d > time.Minute {
		t.Errorf("the cancelled call took %v to end", d)
	}
	t.Cleanup(func() { killAll(procsWith("sleep " + secs)) })
	// Shell starts the command in a process group of its own: the backend
	// must end that group too, not only the runner's.
	eventually(t, time.Minute, "no process of the cancelled call left", func() bool { return len(procsWith("sleep "+secs)) == 0 })
	var audited bool
	for _, r := range auditRecords(t, f.records) {
		if r["tool"] == "shell" && r["class"] == string(broker.ClassCancelled) {
			audited = true
		}
	}
	if !audited {
		t.Errorf("no audit record of class %q for the cancelled call", broker.ClassCancelled)
	}
}

func TestCancelNative(t *testing.T) {
	b := sandboxtest.Native(t)
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) { testCancel(t, newFixture(t, b, nil), tr) })
	}
}

func TestCancelUnsandboxed(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) { testCancel(t, newFixture(t, nil, nil), tr) })
	}
}

// uniqueSleep returns a sleep command whose argument finds its process in
// /proc, whatever its pid namespace.
func uniqueSleep() (command, marker string) {
	marker = fmt.Sprintf("sleep 600.%06d", time.Now().UnixNano()%1e6)
	return marker, marker
}

// TestClientLeavesMidCall checks that a client going away stops its calls:
// over stdio by closing its end of the stream, over HTTP by ending its
// session (DELETE), which the SDK would otherwise hold until the call ends.
func TestClientLeavesMidCall(t *testing.T) {
	for _, tc := range []struct {
		name  string
		leave func(t *testing.T, f *fixture) func()
	}{
		{"stdio", func(t *testing.T, f *fixture) func() {
			toServerR, toServerW := io.Pipe()
			toClientR, toClientW := io.Pipe()
			go f.srv.Serve(context.Background(), &mcpserver.StdioTransport{Reader: toServerR, Writer: toClientW})
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(),
				&mcp.IOTransport{Reader: toClientR, Writer: toServerW}, nil)
			if err != nil {
				t.Fatal(err)
			}
			cmd, _ := uniqueSleep()
			go cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "shell", Arguments: map[string]any{"command": cmd}})
			// The client process dies: both ends of its stream close.
			return func() { toServerW.Close(); toClientR.Close() }
		}},
		{"http", func(t *testing.T, f *fixture) func() {
			base := serveHTTP(t, f, testToken)
			cs := connectHTTP(t, base, testToken, nil)
			cmd, _ := uniqueSleep()
			go cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "shell", Arguments: map[string]any{"command": cmd}})
			return func() {
				req, _ := http.NewRequest(http.MethodDelete, base+mcpserver.PathMCP, nil)
				req.Header.Set("Authorization", "Bearer "+testToken)
				req.Header.Set("Mcp-Session-Id", cs.ID())
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Errorf("DELETE: %v", err)
					return
				}
				resp.Body.Close()
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, sandboxtest.Native(t), nil)
			leave := tc.leave(t, f)
			eventually(t, 15*time.Second, "the call to start", func() bool {
				return hasLine(metrics(t, f.srv), "airlock_calls_running 1")
			})
			start := time.Now()
			leave()
			eventually(t, time.Minute, "the call and its session to end", func() bool {
				m := metrics(t, f.srv)
				return hasLine(m, "airlock_calls_in_flight 0") && hasLine(m, "airlock_sessions_open 0")
			})
			t.Logf("the call ended %v after the client left", time.Since(start))
		})
	}
}
