package cli

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/toolserver"
)

// TestToolServerShutdownLeavesNothing: `airlock tool-server --listen` told
// to stop (SIGTERM; here its context) while a broker's command runs ends
// that connection's sandboxes and waits for their teardown before it
// returns. A broker's connection is a WebSocket, which http.Server's
// Shutdown neither waits for nor ends: the command returned with the
// sandbox still up, and the placeholders it held at the missing protected
// names of the workspace (.bashrc, .envrc, ...) stayed there, empty files
// in the user's tree.
func TestToolServerShutdownLeavesNothing(t *testing.T) {
	t.Setenv("AIRLOCK_STATE_DIR", t.TempDir())
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tok := filepath.Join(t.TempDir(), "token")
	const token = "0123456789abcdef0123"
	if err := os.WriteFile(tok, []byte(token), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	pr, pw := io.Pipe()
	exited := make(chan int, 1)
	go func() {
		exited <- Main(ctx, []string{"tool-server", "--root", ws, "--listen", "127.0.0.1:0", "--token-file", tok}, strings.NewReader(""), io.Discard, pw)
		pw.Close()
	}()
	addr := ""
	sc := bufio.NewScanner(pr)
	for sc.Scan() {
		if a, ok := strings.CutPrefix(sc.Text(), "airlock tool-server: listening on "); ok {
			addr, _, _ = strings.Cut(a, " ")
			break
		}
	}
	if addr == "" {
		t.Fatal("the tool-server did not say where it listens")
	}
	go io.Copy(io.Discard, pr)

	b, err := toolserver.New(context.Background(), &toolserver.Options{Endpoint: addr, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	g, err := grant.FromFlags(ws, grant.Flags{ReadWrite: []string{ws}})
	if err != nil {
		t.Fatal(err)
	}
	spec := broker.SpecFor(g, g.LimitsFor("shell"))
	spec.Command = []string{"/bin/sh", "-c", "sleep 600"}
	spec.Cwd = ws
	go b.Run(context.Background(), spec)
	placeholder := filepath.Join(ws, ".bashrc")
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Lstat(placeholder); err == nil {
			break // the command's sandbox is up
		}
		if time.Now().After(deadline) {
			t.Fatal("the command's sandbox held no placeholder in the workspace")
		}
	}

	stop() // SIGTERM
	if code := <-exited; code != exitOK {
		t.Errorf("tool-server exited %d", code)
	}
	if _, err := os.Lstat(placeholder); err == nil {
		entries, _ := os.ReadDir(ws)
		t.Errorf("the tool-server returned with %d placeholders of its sandbox left in the workspace (%s among them)", len(entries), placeholder)
	}
}
