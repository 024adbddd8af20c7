//go:build unix

package direct_test

import (
	"bufio"
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/direct"
)

// TestSignalReachesTheCommand: Spec.Signal delivers SIGINT, SIGHUP and
// SIGTERM to the command, whose trap runs and decides how it ends, and
// SIGKILL ends it at once, as the Linux sandbox does.
func TestSignalReachesTheCommand(t *testing.T) {
	b, err := direct.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		sig          syscall.Signal
		trap         string
		code, signal int
	}{
		{syscall.SIGINT, "INT", 7, 0},
		{syscall.SIGHUP, "HUP", 7, 0},
		{syscall.SIGTERM, "TERM", 7, 0},
		{syscall.SIGINT, "", -1, int(syscall.SIGINT)},
		{syscall.SIGKILL, "TERM", -1, int(syscall.SIGKILL)},
	}
	for _, tt := range tests {
		t.Run(tt.sig.String()+" trap "+tt.trap, func(t *testing.T) {
			script := `echo ready; while :; do sleep 0.05; done`
			if tt.trap != "" {
				script = `trap "echo got ` + tt.trap + `; exit 7" ` + tt.trap + `; ` + script
			}
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			sigs := make(chan syscall.Signal, 1)
			spec := &sandbox.Spec{
				Command: []string{"/bin/sh", "-c", script}, Stdout: w, Signal: sigs,
				Env: []string{"PATH=/usr/bin:/bin"}, Cwd: t.TempDir(), Limits: sandbox.Limits{Wall: time.Minute},
			}
			type ran struct {
				res *sandbox.Result
				err error
			}
			done := make(chan ran, 1)
			go func() {
				res, err := b.Run(context.Background(), spec)
				w.Close()
				done <- ran{res, err}
			}()
			lines := bufio.NewScanner(r)
			for lines.Scan() && lines.Text() != "ready" {
			}
			sigs <- tt.sig
			var rest strings.Builder
			for lines.Scan() {
				rest.WriteString(lines.Text() + "\n")
			}
			got := <-done
			if got.err != nil {
				t.Fatalf("Run: %v", got.err)
			}
			if got.res.ExitCode != tt.code || got.res.Signal != tt.signal {
				t.Errorf("exit %d signal %d, want %d and %d; stdout after ready %q", got.res.ExitCode, got.res.Signal, tt.code, tt.signal, rest.String())
			}
			if tt.code == 7 && rest.String() != "got "+tt.trap+"\n" {
				t.Errorf("stdout after ready %q, want the trap's line", rest.String())
			}
		})
	}
}
