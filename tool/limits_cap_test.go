package tool

import (
	"testing"

	"github.com/airlockhq/airlock/wire"
)

// TestOutputCapTakesTheGrantsMost: a grant's output limit is the cap up to
// and including the most a grant may set (1 GiB); only an unset or
// impossible one falls back to the default.
func TestOutputCapTakesTheGrantsMost(t *testing.T) {
	for _, tc := range []struct{ limit, want int64 }{
		{0, defaultOutputBytes}, {4096, 4096}, {1 << 30, 1 << 30}, {1<<30 + 1, defaultOutputBytes}, {1 << 40, defaultOutputBytes},
	} {
		if got := outputCap(Env{Limits: wire.ToolLimits{OutputBytes: tc.limit}}); int64(got) != tc.want {
			t.Errorf("output limit %d: cap %d, want %d", tc.limit, got, tc.want)
		}
	}
}
