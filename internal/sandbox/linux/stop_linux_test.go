package linux_test

import (
	"bufio"
	"context"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox"
)

// TestStopRightAfterReady: a stop that arrives the moment the sandbox is
// ready still reaches the command as SIGTERM (the init asks for the signal
// before it says "ready"), instead of killing the init by Go's default action.
func TestStopRightAfterReady(t *testing.T) {
	for i := 0; i < 5; i++ {
		stop := make(chan struct{})
		close(stop)
		start := time.Now()
		o := run(t, &sandbox.Spec{Command: []string{"/bin/sh", "-c", "trap 'echo got-term; exit 7' TERM; while :; do sleep 0.05; done"}, Stop: stop})
		if d := time.Since(start); d > 10*time.Second {
			t.Fatalf("stop took %v", d)
		}
		if o.res.ExitCode == 2 {
			t.Fatalf("the init died of the stop before passing it on: %+v, stderr %q", o.res, o.stderr)
		}
		if o.res.Signal == 0 && o.res.ExitCode != 7 && o.res.ExitCode != 128+15 {
			t.Fatalf("run %d: exit %d signal %d; want the command stopped by SIGTERM (stdout %q)", i, o.res.ExitCode, o.res.Signal, o.stdout)
		}
	}
}

// TestSignalReachesTheCommand: Spec.Signal delivers SIGINT, SIGHUP and
// SIGTERM to the command, whose trap runs and decides how it ends, and
// SIGKILL ends the sandbox at once.
func TestSignalReachesTheCommand(t *testing.T) {
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
				Env: []string{"PATH=/usr/bin:/bin"}, Limits: sandbox.Limits{Wall: time.Minute},
			}
			type ran struct {
				res *sandbox.Result
				err error
			}
			done := make(chan ran, 1)
			go func() {
				res, err := backend(t).Run(context.Background(), spec)
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
