package linux_test

import (
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
