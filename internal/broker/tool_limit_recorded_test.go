package broker_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/sandboxtest"
	"github.com/airlockhq/airlock/wire"
)

// TestToolsOwnLimitIsNamedAndRecorded: a limit the shell tool enforces
// itself, inside the sandbox (its "timeout" argument, and the kill of a
// command that writes more than tool.ShellKillFactor times its output cap),
// is a limit the call hit like one the backend enforces: the label names
// it, Meta.LimitsHit lists it, and the audit record's limits_hit keeps it,
// so `airlock log` does not show a killed command as a plain "ok".
func TestToolsOwnLimitIsNamedAndRecorded(t *testing.T) {
	f := newFixture(t, grant.Limits{Output: 64 << 10})
	s := f.open(t, sandboxtest.Native(t), nil)
	for _, tc := range []struct {
		name, args string
		limit      wire.Limit
	}{
		{"shell's own timeout", `{"command":"sleep 600","timeout":1}`, wire.LimitTime},
		{"output past the kill factor", fmt.Sprintf(`{"command":%q}`, "yes | head -c 100000000; sleep 600"), wire.LimitOutput},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := call(t, s, "shell", tc.args)
			if res.Output.Meta.Limit != tc.limit {
				t.Fatalf("Meta.Limit = %q, want %q (output %.300q)", res.Output.Meta.Limit, tc.limit, res.Output.Content)
			}
			if !slices.Contains(res.Output.Meta.LimitsHit, tc.limit) {
				t.Errorf("Meta.LimitsHit = %v, want it to name %q", res.Output.Meta.LimitsHit, tc.limit)
			}
			if header, _, _ := strings.Cut(res.Output.Content, "\n"); !strings.Contains(header, "limit hit: "+string(tc.limit)) {
				t.Errorf("label %q does not name the limit %q", header, tc.limit)
			}
			var found bool
			for _, r := range calls(records(t, f.records)) {
				if r.CallID != res.CallID {
					continue
				}
				found = true
				if !slices.Contains(r.LimitsHit, tc.limit) {
					t.Errorf("audit record's limits_hit = %v, want it to name %q (class %s)", r.LimitsHit, tc.limit, r.Class)
				}
			}
			if !found {
				t.Fatalf("no audit record for call %s", res.CallID)
			}
		})
	}
}
