package cli

import (
	"slices"
	"testing"
	"time"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/wire"
)

// TestCallLimitSentences: airlock call names each limit once, telling the
// sandbox's time limit (in Meta.LimitsHit) from shell's own timeout (only in
// Meta.Limit), both spelled wire.LimitTime, and the old spelling "timeout"
// reads the same.
func TestCallLimitSentences(t *testing.T) {
	lim := grant.Limits{Time: 30 * time.Second, Output: 1 << 20}
	tests := []struct {
		name string
		meta string // the ToolOutput's meta, as JSON
		args string
		want []string
	}{
		{"shell's own timeout", `{"limit":"time"}`, `{"command":"sleep 9","timeout":2}`,
			[]string{"shell ran past its timeout (2s) and was killed"}},
		{"shell's own timeout, old spelling", `{"limit":"timeout"}`, `{"command":"sleep 9","timeout":2}`,
			[]string{"shell ran past its timeout (2s) and was killed"}},
		{"the sandbox's time limit", `{"limit":"time","limits_hit":["time"]}`, `{"command":"sleep 99"}`,
			[]string{"shell ran past its time limit (30s) and was killed"}},
		{"shell's own output cap", `{"limit":"output"}`, `{"command":"yes"}`,
			[]string{"shell wrote more than 8 times its output limit (1MiB) and was stopped"}},
		{"nothing", `{}`, `{"command":"true"}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out wire.ToolOutput
			if err := wire.DecodeStrict([]byte(`{"content":"","meta":`+tt.meta+`}`), &out); err != nil {
				t.Fatal(err)
			}
			got := callLimitSentences("shell", tt.args, out.Meta, lim)
			if !slices.Equal(got, tt.want) {
				t.Errorf("callLimitSentences = %q, want %q", got, tt.want)
			}
		})
	}
}
