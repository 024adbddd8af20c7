package sandbox

import (
	"slices"
	"testing"

	"github.com/airlockhq/airlock/wire"
)

// TestHitsApply: every limit hit is listed in order; the one that ended
// the run is the output cap or the deadline, else memory or processes
// only for a payload that did not finish normally.
func TestHitsApply(t *testing.T) {
	for _, tc := range []struct {
		h         Hits
		code, sig int
		limit     wire.Limit
		hit       []wire.Limit
	}{
		{Hits{}, 0, 0, "", nil},
		{Hits{Time: true, Memory: true}, -1, 9, LimitTime, []wire.Limit{LimitTime, LimitMemory}},
		{Hits{Output: true, Time: true}, -1, 9, LimitOutput, []wire.Limit{LimitTime, LimitOutput}},
		{Hits{Memory: true}, -1, 9, LimitMemory, []wire.Limit{LimitMemory}},
		{Hits{Memory: true, Processes: true}, 0, 0, "", []wire.Limit{LimitMemory, LimitProcesses}},
		{Hits{Processes: true}, 1, 0, LimitProcesses, []wire.Limit{LimitProcesses}},
	} {
		r := &Result{ExitCode: tc.code, Signal: tc.sig, Limit: "stale", LimitsHit: []wire.Limit{"stale"}}
		tc.h.Apply(r)
		if r.Limit != tc.limit || !slices.Equal(r.LimitsHit, tc.hit) {
			t.Errorf("%+v exit %d signal %d: Limit %q LimitsHit %q, want %q %q", tc.h, tc.code, tc.sig, r.Limit, r.LimitsHit, tc.limit, tc.hit)
		}
	}
}
