package linux_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/linux"
	"github.com/airlockhq/airlock/wire"
)

// TestInitEndsTheSandboxAtItsDeadline: with the host's deadline timers
// missed (a broker stopped by job control runs none), the sandbox's init
// ends it at its time limit all the same, whatever its processes do to
// themselves, cold (the deadline in the config), warm (in the claim) and
// with a terminal; the result names the time limit and nothing is left.
func TestInitEndsTheSandboxAtItsDeadline(t *testing.T) {
	scripts := map[string]string{
		"stop":      "kill -STOP $$",
		"stop-all":  "sleep 987670 & kill -STOP 0; wait",
		"setsid":    "setsid sh -c 'trap \"\" TERM; kill -STOP $$' & sleep 987671 & trap '' TERM HUP INT; wait",
		"spin":      "trap '' TERM; while :; do :; done",
		"stop-init": "sleep 987672 & kill -STOP 1; wait",
	}
	type mode struct {
		name string
		b    func(t *testing.T, spec *sandbox.Spec) *linux.Backend
		tty  bool
	}
	cold := func(t *testing.T, spec *sandbox.Spec) *linux.Backend { return backend(t) }
	warmB := func(t *testing.T, spec *sandbox.Spec) *linux.Backend {
		b := pooled(t, 1)
		if err := b.Prewarm(spec); err != nil {
			t.Fatal(err)
		}
		waitWarm(t, b, spec, 1)
		return b
	}
	for _, m := range []mode{{"cold", cold, false}, {"cold-tty", cold, true}, {"warm", warmB, false}} {
		for name, script := range scripts {
			t.Run(m.name+"/"+name, func(t *testing.T) {
				spec := &sandbox.Spec{Env: []string{"PATH=/usr/bin:/bin"}, TTY: m.tty,
					Limits: sandbox.Limits{Wall: time.Second, AllowUnenforced: acceptUnenforced}}
				input := ""
				if m.name == "warm" {
					input = "sh:" + script
				} else {
					spec.Command = []string{"/bin/sh", "-c", script}
				}
				b := m.b(t, spec)
				var so, se bytes.Buffer
				spec.Stdin, spec.Stdout, spec.Stderr = strings.NewReader(input), &so, &se
				if m.tty {
					spec.Stderr = nil
				}
				defer linux.MissDeadlines()()
				// Bounded by a cancel, which does not wait for a timer:
				// without the init's backstop the sandbox runs until then.
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				res, err := b.Run(ctx, spec)
				if err != nil {
					t.Fatalf("Run: %v (the sandbox ran on past its 1s deadline until cancelled?)", err)
				}
				if res.Limit != sandbox.LimitTime || res.Signal != 9 || res.ExitCode != -1 {
					t.Errorf("result %+v, want the time limit, killed by SIGKILL; stdout %q stderr %q", res, so.String(), se.String())
				}
				if m.name == "warm" && !warm(out{res: res}) {
					t.Errorf("the call was not warm: %v", res.Isolation.Features)
				}
				waitNoProcs(t, "98767")
			})
		}
	}
}

// TestToolEndingPastTheDeadlineIsATimeout: a tool that times itself by the
// call's limit (the shell tool's timeout is at most the call's) ends a
// little after the host's deadline, since its clock starts once the
// sandbox is set up. When the host's kill was late (a loaded machine; here
// the host's deadline timers are missed outright), the tool's own answer
// came first and the call was ok, "[timed out after 1s]", instead of the
// time limit: an answer read after the deadline is the time limit's.
func TestToolEndingPastTheDeadlineIsATimeout(t *testing.T) {
	d := newDirs(t)
	spec := &sandbox.Spec{Env: []string{"PATH=/usr/bin:/bin"}, Cwd: d.W, Mounts: d.mounts(),
		Limits: sandbox.Limits{Wall: time.Second, AllowUnenforced: acceptUnenforced}}
	in, err := json.Marshal(wire.ToolInput{Tool: "shell", Args: json.RawMessage(`{"command":"sleep 987680"}`), Context: wire.CallContext{
		CallID: "call_t", Root: "/", Cwd: d.W, Limits: wire.ToolLimits{TimeoutMS: spec.Limits.Wall.Milliseconds()},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var frame, so, se bytes.Buffer
	frame.WriteString("runner:")
	if err := wire.WriteFrame(&frame, in); err != nil {
		t.Fatal(err)
	}
	spec.Stdin, spec.Stdout, spec.Stderr = &frame, &so, &se
	defer linux.MissDeadlines()()
	res, err := backend(t).Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if res.Limit != sandbox.LimitTime {
		t.Errorf("result %+v, want the time limit; stdout %q", res, so.String())
	}
	waitNoProcs(t, "987680")
}
