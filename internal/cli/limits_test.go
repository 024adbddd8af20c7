package cli

import (
	"slices"
	"testing"
	"time"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/wire"
)

// TestCallLimitSentences: airlock call names each limit once, telling the
// sandbox's time limit (a call of class timeout) from shell's own timeout (a
// call of class ok with Meta.Limit set), both spelled wire.LimitTime and
// both in Meta.LimitsHit, and the old spelling "timeout" reads the same.
func TestCallLimitSentences(t *testing.T) {
	lim := grant.Limits{Time: 30 * time.Second, Output: 1 << 20}
	tests := []struct {
		name  string
		class wire.Class
		meta  string // the ToolOutput's meta, as JSON
		args  string
		want  []string
	}{
		{"shell's own timeout", wire.ClassOK, `{"limit":"time","limits_hit":["time"]}`, `{"command":"sleep 9","timeout":2}`,
			[]string{"shell ran past its timeout (2s) and was killed"}},
		{"shell's own timeout, from a broker that did not list it", wire.ClassOK, `{"limit":"time"}`, `{"command":"sleep 9","timeout":2}`,
			[]string{"shell ran past its timeout (2s) and was killed"}},
		{"shell's own timeout, old spelling", wire.ClassOK, `{"limit":"timeout"}`, `{"command":"sleep 9","timeout":2}`,
			[]string{"shell ran past its timeout (2s) and was killed"}},
		{"shell's own timeout and the process limit", wire.ClassOK, `{"limit":"time","limits_hit":["time","processes"]}`, `{"command":"sleep 9","timeout":2}`,
			[]string{"shell hit its process limit (0): a fork was refused", "shell ran past its timeout (2s) and was killed"}},
		{"the sandbox's time limit", wire.ClassTimeout, `{"limit":"time","limits_hit":["time"]}`, `{"command":"sleep 99"}`,
			[]string{"shell ran past its time limit (30s) and was killed"}},
		{"shell's own output cap", wire.ClassOK, `{"limit":"output","limits_hit":["output"]}`, `{"command":"yes"}`,
			[]string{"shell wrote more than 8 times its output limit (1MiB) and was stopped"}},
		{"nothing", wire.ClassOK, `{}`, `{"command":"true"}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out wire.ToolOutput
			if err := wire.DecodeStrict([]byte(`{"content":"","meta":`+tt.meta+`}`), &out); err != nil {
				t.Fatal(err)
			}
			got := callLimitSentences("shell", tt.args, tt.class, out.Meta, lim)
			if !slices.Equal(got, tt.want) {
				t.Errorf("callLimitSentences = %q, want %q", got, tt.want)
			}
		})
	}
}
