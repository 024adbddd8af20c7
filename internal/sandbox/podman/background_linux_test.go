package podman

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
)

// TestLiveBackgroundCommand: shell run_in_background and
// background_command work through the Podman backend, and stop ends the
// whole container, a daemon that left the command's process group too.
func TestLiveBackgroundCommand(t *testing.T) {
	b := newLive(t)
	ws := t.TempDir()
	g, err := grant.Parse([]byte("[paths]\nread_write = [\".\"]\n"), "g.toml", ws)
	if err != nil {
		t.Fatal(err)
	}
	s, err := broker.Open(&broker.Options{Grant: g, Backend: b, RecordsDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	run := func(tool, args string) *broker.Result {
		t.Helper()
		res, err := s.Call(context.Background(), tool, json.RawMessage(args))
		if err != nil {
			t.Fatalf("%s %s: %v", tool, args, err)
		}
		return res
	}
	res := run("shell", `{"command":"echo one; sleep 0.2; echo two","run_in_background":true}`)
	id := res.Output.Meta.WorkID
	if !strings.HasPrefix(id, "wrk_") {
		t.Fatalf("start: %+v", res.Output)
	}
	if out := run("background_command", fmt.Sprintf(`{"operation":"wait","work_id":%q}`, id)).Output.Content; !strings.Contains(out, "two") || !strings.Contains(out, "exit") {
		t.Errorf("wait: %q", out)
	}
	marker := "sleep 987652"
	script := `(setsid sh -c 'trap "echo daemon got TERM > daemon.log; exit" TERM; touch daemon.ready; while :; do sleep 0.1; done # sleep 987652' &)
while [ ! -e daemon.ready ]; do sleep 0.05; done; echo ready; sleep 987652`
	res = run("shell", fmt.Sprintf(`{"command":%q,"run_in_background":true}`, script))
	id = res.Output.Meta.WorkID
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(run("background_command", fmt.Sprintf(`{"operation":"status","work_id":%q}`, id)).Output.Content, "ready") {
		if time.Now().After(deadline) {
			t.Fatal("the background command never said ready")
		}
		time.Sleep(100 * time.Millisecond)
	}
	stopOut := run("background_command", fmt.Sprintf(`{"operation":"stop","work_id":%q}`, id)).Output.Content
	if !strings.Contains(stopOut, "stopped") {
		t.Errorf("stop: %q", stopOut)
	}
	if got, _ := os.ReadFile(filepath.Join(ws, "daemon.log")); !strings.Contains(string(got), "daemon got TERM") {
		t.Errorf("a daemon outside the command's process group did not hear the stop's SIGTERM (log %q); stop said %q", got, stopOut)
	}
	if out, _ := exec.Command("pgrep", "-f", marker).Output(); len(out) > 0 {
		t.Errorf("processes outlived the stop: %s", out)
	}
}
