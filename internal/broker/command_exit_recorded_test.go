package broker_test

import (
	"strconv"
	"testing"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/sandboxtest"
)

// TestCommandExitIsRecorded: the audit record of a shell call keeps the
// exit status of its command. The record's exit is the runner's, 0 for
// every command that ran to its end, so `exit 4` was recorded as exit 0
// and `airlock log` showed it as a plain ok.
func TestCommandExitIsRecorded(t *testing.T) {
	f := newFixture(t, grant.Limits{})
	s := f.open(t, sandboxtest.Native(t), nil)
	for _, want := range []int{4, 0} {
		res := call(t, s, "shell", `{"command":"exit `+strconv.Itoa(want)+`"}`)
		if c := res.Output.Meta.ExitCode; c == nil || *c != want {
			t.Fatalf("Meta.ExitCode = %v, want %d", c, want)
		}
		for _, r := range calls(records(t, f.records)) {
			if r.CallID != res.CallID {
				continue
			}
			if r.ExitCode == nil || *r.ExitCode != want {
				t.Errorf("exit %d: the record's exit_code is not %d (its exit, the runner's: %s)", want, want, intOr(r.Exit))
			}
		}
	}
}

func intOr(p *int) string {
	if p == nil {
		return "none"
	}
	return strconv.Itoa(*p)
}
