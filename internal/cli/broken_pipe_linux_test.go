package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/internal/audit"
)

// TestMCPStdoutGoneClosesTheSession: airlock mcp whose client stopped
// reading its standard output for good (closed its end of the pipe, as a
// client that crashed mid-read or half-closed does) ends its session as
// on the end of stdin: its background work is stopped and has its end
// record, and the session its close. A write to the broken pipe was left
// to Go's default for standard output, SIGPIPE, which killed the process
// at once: the work's sandbox died with it, and the records said it ran,
// without an end, until some later start of airlock recovered them.
func TestMCPStdoutGoneClosesTheSession(t *testing.T) {
	airlock, err := exec.LookPath("airlock")
	if err != nil {
		t.Fatalf("the test binary is not on PATH as airlock: %v", err)
	}
	records := t.TempDir()
	cmd := exec.Command(airlock, "mcp", "--records", records)
	cmd.Dir = t.TempDir()
	// stdin stays open until the test ends: the client has not gone
	// away, it only stopped reading.
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		stdin.Close()
		<-exited
	})
	send := func(m string) {
		t.Helper()
		if _, err := io.WriteString(stdin, m+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"shell","arguments":{"command":"sleep 1000","run_in_background":true}}}`)
	work := backgroundWorkID(t, stdout, 2)
	// The client stops reading; its next request's answer meets the
	// broken pipe.
	stdout.Close()
	send(`{"jsonrpc":"2.0","id":3,"method":"ping"}`)
	<-exited
	var ee *exec.ExitError
	if errors.As(waitErr, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			t.Errorf("airlock mcp died of %v instead of ending its session", ws.Signal())
		}
	}
	ended, closed := workEndedSessionClosed(t, records, work)
	if !ended || !closed {
		t.Errorf("after its stdout broke (airlock mcp %v): background work %s has an end record: %v; the session a close record: %v; stderr:\n%s", cmd.ProcessState, work, ended, closed, stderr.String())
	}
}

// TestServeStderrGoneKeepsServing: airlock serve whose standard error (its
// log) went away (the program it was piped into ended) goes on serving and,
// on SIGTERM, ends its sessions in order. Its next log line met the broken
// pipe and Go's default, SIGPIPE, killed the server at once: every
// session's calls and background work died with it, unrecorded, until some
// later start of airlock recovered them.
func TestServeStderrGoneKeepsServing(t *testing.T) {
	airlock, err := exec.LookPath("airlock")
	if err != nil {
		t.Fatalf("the test binary is not on PATH as airlock: %v", err)
	}
	records := t.TempDir()
	cmd := exec.Command(airlock, "serve", "--listen", "127.0.0.1:0", "--insecure-no-auth", "--records", records, "--shutdown-timeout", "100ms")
	cmd.Dir = t.TempDir()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	var url string
	sc := bufio.NewScanner(stderr)
	for url == "" && sc.Scan() {
		if _, after, ok := strings.Cut(sc.Text(), "airlock serve: serving MCP at "); ok {
			url, _, _ = strings.Cut(after, " ")
		}
	}
	if url == "" {
		t.Fatal("airlock serve said no address")
	}
	connect := func() (*mcp.ClientSession, error) {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, nil)
		if err == nil {
			t.Cleanup(func() { cs.Close() })
		}
		return cs, err
	}
	cs, err := connect()
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "shell", Arguments: map[string]any{"command": "sleep 1000", "run_in_background": true}})
	if err != nil || res.IsError {
		t.Fatalf("starting background work: %v %+v", err, res)
	}
	work := res.Meta["airlock/call"].(map[string]any)["work_id"].(string)
	// The log's reader goes away; the next session's opening is logged.
	stderr.Close()
	if _, err := connect(); err != nil {
		t.Errorf("a session after the log's reader went away: %v", err)
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	<-exited
	var ee *exec.ExitError
	if errors.As(waitErr, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			t.Errorf("airlock serve died of %v instead of ending its sessions", ws.Signal())
		}
	}
	if ended, closed := workEndedSessionClosed(t, records, work); !ended || !closed {
		t.Errorf("after its stderr broke (airlock serve %v): background work %s has an end record: %v; a session a close record: %v", cmd.ProcessState, work, ended, closed)
	}
}

// backgroundWorkID reads MCP messages from r until the answer to request
// id, which must have started background work, and returns the work's id.
func backgroundWorkID(t *testing.T, r io.Reader, id int) string {
	t.Helper()
	lines := bufio.NewScanner(r)
	lines.Buffer(nil, 1<<20)
	for lines.Scan() {
		var msg struct {
			ID     int `json:"id"`
			Result struct {
				Meta map[string]struct {
					WorkID string `json:"work_id"`
				} `json:"_meta"`
			} `json:"result"`
		}
		if json.Unmarshal(lines.Bytes(), &msg) != nil || msg.ID != id {
			continue
		}
		if w := msg.Result.Meta["airlock/call"].WorkID; w != "" {
			return w
		}
		t.Fatalf("the start answered %s", lines.Text())
	}
	t.Fatal("airlock ended before answering the start")
	return ""
}

// workEndedSessionClosed reports whether the records under records have
// an end record for background work work, and a session's close record.
func workEndedSessionClosed(t *testing.T, records, work string) (ended, closed bool) {
	t.Helper()
	recs, _, err := audit.ReadAll(records, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		ended = ended || r.Kind == audit.KindBackgroundEnd && r.WorkID == work
		closed = closed || r.Kind == audit.KindSession && r.Decision == "close"
	}
	if _, err := os.Stat(filepath.Join(records, audit.LiveDir)); err == nil {
		if live, _ := os.ReadDir(filepath.Join(records, audit.LiveDir)); len(live) != 0 {
			closed = false
		}
	}
	return ended, closed
}
