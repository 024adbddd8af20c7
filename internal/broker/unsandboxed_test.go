package broker_test

import (
	"context"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandboxtest"
)

// renamedUnsandboxed is the unsandboxed backend under another name: what
// makes a backend unsandboxed is its report's field, not what it is called.
type renamedUnsandboxed struct{ sandbox.Backend }

func (b renamedUnsandboxed) Report() sandbox.Report {
	r := b.Backend.Report()
	r.Backend = "host"
	return r
}

func (b renamedUnsandboxed) Run(ctx context.Context, spec *sandbox.Spec) (*sandbox.Result, error) {
	res, err := b.Backend.Run(ctx, spec)
	if res != nil {
		res.Isolation.Backend = "host"
	}
	return res, err
}

// TestUnsandboxedDecidedByReport: a backend whose report says it runs
// without isolation is labelled UNSANDBOXED, whatever its name, both for
// a call that ran (its result's isolation) and for a background start
// (whose sandbox has not run yet, so the backend's report decides).
func TestUnsandboxedDecidedByReport(t *testing.T) {
	f := newFixture(t, grant.Limits{})
	s := f.open(t, renamedUnsandboxed{sandboxtest.Unsandboxed(t)}, nil)
	res := call(t, s, "read_file", `{"path":"hello.txt"}`)
	if !strings.Contains(res.Output.Content, "· UNSANDBOXED ·") || res.Output.Meta.Isolation == nil || !res.Output.Meta.Isolation.Unsandboxed {
		t.Errorf("call: output %q, isolation %+v; want it labelled UNSANDBOXED", res.Output.Content, res.Output.Meta.Isolation)
	}
	started := call(t, s, "shell", `{"command":"true","run_in_background":true}`)
	if !strings.Contains(started.Output.Content, "· UNSANDBOXED ·") {
		t.Errorf("background start: output %q; want it labelled UNSANDBOXED", started.Output.Content)
	}
}
