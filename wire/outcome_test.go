package wire

import (
	"encoding/json"
	"testing"
)

// TestLimitOneSpelling: a time limit is emitted as "time" only, and the old
// spelling "timeout" an older runner or remote hands may still send reads
// as LimitTime, in Meta.Limit and Meta.LimitsHit, through strict decoding.
func TestLimitOneSpelling(t *testing.T) {
	b, err := json.Marshal(Meta{Limit: LimitTime, LimitsHit: []Limit{LimitTime, LimitProcesses}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"limit":"time","limits_hit":["time","processes"]}`; got != want {
		t.Errorf("Meta encodes as %s, want %s", got, want)
	}
	for _, in := range []string{
		`{"content":"x","meta":{"limit":"timeout","limits_hit":["timeout"]}}`,
		`{"content":"x","meta":{"limit":"time","limits_hit":["time"]}}`,
	} {
		var out ToolOutput
		if err := DecodeStrict([]byte(in), &out); err != nil {
			t.Fatalf("DecodeStrict(%s): %v", in, err)
		}
		if out.Meta.Limit != LimitTime || len(out.Meta.LimitsHit) != 1 || out.Meta.LimitsHit[0] != LimitTime {
			t.Errorf("DecodeStrict(%s): Limit %q, LimitsHit %q; want time", in, out.Meta.Limit, out.Meta.LimitsHit)
		}
		again, _ := json.Marshal(out.Meta)
		if string(again) != `{"limit":"time","limits_hit":["time"]}` {
			t.Errorf("re-encoded as %s", again)
		}
	}
	var l Limit
	if err := json.Unmarshal([]byte(`"gpu"`), &l); err != nil || l != "gpu" {
		t.Errorf(`a limit this side does not know reads as %q, %v; want "gpu"`, l, err)
	}
}

func TestJoinLimits(t *testing.T) {
	if got := JoinLimits([]Limit{LimitMemory, LimitProcesses}, ", "); got != "memory, processes" {
		t.Errorf("JoinLimits = %q", got)
	}
	if got := JoinLimits(nil, ", "); got != "" {
		t.Errorf("JoinLimits(nil) = %q", got)
	}
}
