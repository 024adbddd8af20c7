package cli

import (
	"strconv"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/airlockhq/airlock/internal/egresstest"
)

// TestEgressScripts drives `airlock exec` and `airlock call` through the
// egress proxy, one txtar script per scenario in testdata/egress. The command
// `fixture NAME VAR` starts a plain-HTTP fixture on 127.0.0.1 and sets VAR to
// its port; `sentinel VAR` starts a listener nothing may reach, and
// `sentinel-hits N` checks how many connections it saw; `stall VAR` starts a
// plain-HTTP upstream that sends headers then stalls, and `stall-closed`
// waits until its connection has been closed from the other end.
func TestEgressScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/egress",
		Setup: func(e *testscript.Env) error {
			e.Setenv("AIRLOCK_STATE_DIR", e.WorkDir+"/.state")
			e.Setenv("HOME", e.WorkDir+"/home")
			e.Values[sentinelKey{}] = new(func() int)
			e.Values[stallKey{}] = new(*egresstest.Staller)
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"fixture": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) != 2 {
					ts.Fatalf("usage: fixture NAME VAR")
				}
				s := egresstest.Serve(scriptTB{ts: ts, t: t}, nil, args[0], nil)
				ts.Setenv(args[1], strconv.Itoa(s.Port))
			},
			"sentinel": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) != 1 {
					ts.Fatalf("usage: sentinel VAR")
				}
				port, hits := egresstest.Sentinel(scriptTB{ts: ts, t: t})
				ts.Setenv(args[0], strconv.Itoa(port))
				*ts.Value(sentinelKey{}).(*func() int) = hits
			},
			"stall": func(ts *testscript.TestScript, neg bool, args []string) {
				if neg || len(args) != 1 {
					ts.Fatalf("usage: stall VAR")
				}
				s := egresstest.Stall(scriptTB{ts: ts, t: t}, nil, "s.test")
				ts.Setenv(args[0], strconv.Itoa(s.Port))
				*ts.Value(stallKey{}).(**egresstest.Staller) = s
			},
			"stall-closed": func(ts *testscript.TestScript, neg bool, args []string) {
				s := *ts.Value(stallKey{}).(**egresstest.Staller)
				if neg || s == nil || len(args) != 0 {
					ts.Fatalf("usage: stall VAR first, then stall-closed")
				}
				select {
				case <-s.Stalled():
				default:
					ts.Fatalf("the upstream never stalled a response")
				}
				select {
				case <-s.Closed():
				case <-time.After(30 * time.Second):
					ts.Fatalf("the stalled upstream's connection is still open")
				}
			},
			"sentinel-hits": func(ts *testscript.TestScript, neg bool, args []string) {
				hits := *ts.Value(sentinelKey{}).(*func() int)
				if hits == nil || len(args) != 1 {
					ts.Fatalf("usage: sentinel VAR first, then sentinel-hits N")
				}
				if got := strconv.Itoa(hits()); got != args[0] {
					ts.Fatalf("the sentinel saw %s connections, want %s", got, args[0])
				}
			},
		},
	})
}

type (
	sentinelKey struct{}
	stallKey    struct{}
)

// scriptTB adapts a script to the testing.TB the fixtures take: failures
// fail the script, cleanups run when the script ends.
type scriptTB struct {
	testing.TB
	ts *testscript.TestScript
	t  *testing.T
}

func (s scriptTB) Helper()                           {}
func (s scriptTB) Fatal(args ...any)                 { s.ts.Fatalf("%v", args) }
func (s scriptTB) Fatalf(format string, args ...any) { s.ts.Fatalf(format, args...) }
func (s scriptTB) Cleanup(f func())                  { s.ts.Defer(f) }
