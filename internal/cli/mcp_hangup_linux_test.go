package cli

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/audit"
)

// TestMCPHangupClosesTheSession: airlock mcp told to hang up (SIGHUP: the
// terminal it runs in closed, its client's session ended) closes its
// session as on SIGTERM: its background work is stopped and has its end
// record, and the session its close. SIGHUP was not caught, so the
// process died at once: the work's sandbox died with it, and the records
// said it ran, without an end, until some later start of airlock over the
// same records directory recovered them.
func TestMCPHangupClosesTheSession(t *testing.T) {
	airlock, err := exec.LookPath("airlock")
	if err != nil {
		t.Fatalf("the test binary is not on PATH as airlock: %v", err)
	}
	records := t.TempDir()
	cmd := exec.Command(airlock, "mcp", "--records", records)
	cmd.Dir = t.TempDir()
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
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	for _, m := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"shell","arguments":{"command":"sleep 1000","run_in_background":true}}}`,
	} {
		if _, err := stdin.Write([]byte(m + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	var work string
	lines := bufio.NewScanner(stdout)
	lines.Buffer(nil, 1<<20)
	for work == "" && lines.Scan() {
		var msg struct {
			ID     int `json:"id"`
			Result struct {
				Content []struct{ Text string } `json:"content"`
			} `json:"result"`
		}
		if json.Unmarshal(lines.Bytes(), &msg) != nil || msg.ID != 2 {
			continue
		}
		for _, c := range msg.Result.Content {
			if _, after, ok := strings.Cut(c.Text, "started background work "); ok {
				work, _, _ = strings.Cut(after, ";")
			}
		}
		if work == "" {
			t.Fatalf("the start answered %s", lines.Text())
		}
	}
	if work == "" {
		_ = cmd.Wait()
		t.Fatalf("airlock mcp ended before answering the start; stderr:\n%s", stderr.String())
	}
	// The hangup, with stdin still open: its end would close the session
	// on its own.
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	for lines.Scan() {
	}
	_ = cmd.Wait()
	recs, _, err := audit.ReadAll(records, "")
	if err != nil {
		t.Fatal(err)
	}
	var ended, closed bool
	for _, r := range recs {
		ended = ended || r.Kind == audit.KindBackgroundEnd && r.WorkID == work
		closed = closed || r.Kind == audit.KindSession && r.Decision == "close"
	}
	if !ended || !closed {
		t.Errorf("after SIGHUP (airlock mcp %v): background work %s has an end record: %v; the session a close record: %v; stderr:\n%s", cmd.ProcessState, work, ended, closed, stderr.String())
	}
}

// TestCallHangupRecordsTheCall: the same for airlock call, whose one call
// was cancelled on SIGTERM, recorded, and its session closed, and on SIGHUP
// had neither record.
func TestCallHangupRecordsTheCall(t *testing.T) {
	airlock, err := exec.LookPath("airlock")
	if err != nil {
		t.Fatalf("the test binary is not on PATH as airlock: %v", err)
	}
	records, ws := t.TempDir(), t.TempDir()
	cmd := exec.Command(airlock, "call", "--records", records, "shell", `{"command":"touch started; sleep 1000"}`)
	cmd.Dir = ws
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	for {
		if _, err := os.Stat(filepath.Join(ws, "started")); err == nil {
			break
		}
		select {
		case <-exited:
			t.Fatalf("airlock call ended before its command started: %v\n%s", cmd.ProcessState, stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	<-exited
	recs, _, err := audit.ReadAll(records, "")
	if err != nil {
		t.Fatal(err)
	}
	var called, closed bool
	for _, r := range recs {
		called = called || r.Kind == audit.KindCall && r.Tool == "shell"
		closed = closed || r.Kind == audit.KindSession && r.Decision == "close"
	}
	if !called || !closed {
		t.Errorf("after SIGHUP (airlock call %v): the call has a record: %v; the session a close record: %v; stderr:\n%s", cmd.ProcessState, called, closed, stderr.String())
	}
}
