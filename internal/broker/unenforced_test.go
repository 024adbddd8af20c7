package broker_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/wire"
)

// unenforcingBackend stands for the Linux backend of a user who may manage
// no cgroup: it reports the memory and process limits as not enforced,
// refuses a spec that does not accept that, and otherwise "runs" a call by
// answering it. (The real backend and CLI go through the same as uid 65534
// in internal/cli TestUnprivilegedLimits; this covers the background paths.)
type unenforcingBackend struct{}

func (unenforcingBackend) Report() sandbox.Report {
	return sandbox.Report{Backend: "linux", Limits: []sandbox.LimitStatus{
		{Limit: sandbox.LimitTime, Enforced: true}, {Limit: sandbox.LimitMemory}, {Limit: sandbox.LimitProcesses}}}
}

func (unenforcingBackend) Run(_ context.Context, spec *sandbox.Spec) (*sandbox.Result, error) {
	if !spec.Limits.AllowUnenforced {
		return nil, &sandbox.MissingFeatureError{Feature: "a cgroup to enforce the memory limit", Fix: "Delegate=yes"}
	}
	if len(spec.Command) == 0 {
		b, _ := json.Marshal(wire.ToolOutput{Content: "tool ran"})
		if err := wire.WriteFrame(spec.Stdout, b); err != nil {
			return nil, err
		}
	}
	return &sandbox.Result{Isolation: wire.Isolation{Backend: "linux", Features: []string{"userns"}, Unenforced: []wire.Limit{"memory", "processes"}}}, nil
}

// TestUnenforcedLimitsLabelled: with a grant that accepts unenforced
// limits every answer's label says which did not hold, the background
// start (whose sandbox has not run yet) and its status included, and the
// audit records list them; without it the call is refused.
func TestUnenforcedLimitsLabelled(t *testing.T) {
	const label = " · limits NOT ENFORCED: memory, processes]"
	f := newFixture(t, grant.Limits{})
	refusing := f.open(t, unenforcingBackend{}, nil)
	if res := call(t, refusing, "read_file", `{"path":"hello.txt"}`); res.Class != broker.ClassSandbox || !strings.Contains(res.Output.Content, "Delegate=yes") || strings.Contains(res.Output.Content, "tool ran") {
		t.Fatalf("without the opt-out: class %s, output %q; want the call refused with the fix", res.Class, res.Output.Content)
	}

	g, err := grant.FromFlags(f.ws, grant.Flags{AllowUnenforcedLimits: true})
	if err != nil {
		t.Fatal(err)
	}
	f.grant = g
	s := f.open(t, unenforcingBackend{}, nil)
	res := call(t, s, "read_file", `{"path":"hello.txt"}`)
	if res.Class != broker.ClassOK || !strings.Contains(res.Output.Content, label) || !strings.Contains(res.Output.Content, "tool ran") {
		t.Fatalf("call: class %s, output %q; want it run and labelled %q", res.Class, res.Output.Content, label)
	}
	started := call(t, s, "shell", `{"command":"true","run_in_background":true}`)
	id := started.Output.Meta.WorkID
	if started.Class != broker.ClassOK || id == "" || !strings.Contains(started.Output.Content, label) {
		t.Fatalf("background start: class %s, output %q; want it started and labelled %q", started.Class, started.Output.Content, label)
	}
	if got := workCall(t, s, "wait", id, `,"wait_secs":30`).Output.Content; !strings.Contains(got, label) {
		t.Errorf("background status %q is not labelled %q", got, label)
	}
	for _, r := range calls(records(t, f.records)) {
		if r.Tool == "read_file" && r.Class == broker.ClassOK && !slices.Equal(r.Unenforced, []wire.Limit{"memory", "processes"}) {
			t.Errorf("call record unenforced_limits = %q", r.Unenforced)
		}
	}
	var labelled bool
	for _, r := range records(t, f.records) {
		if r.Kind == "background-end" && r.WorkID == id {
			labelled = slices.Equal(r.Unenforced, []wire.Limit{"memory", "processes"})
		}
	}
	if !labelled {
		t.Errorf("the background-end record does not list the limits not enforced")
	}
}
