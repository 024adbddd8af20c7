package tool

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBackgroundCommandParse(t *testing.T) {
	secs := func(n int) *int { return &n }
	const id = "wrk_0123456789abcdef"
	tests := []struct {
		name, args string
		want       BackgroundCommandArgs
		err        string
	}{
		{name: "status", args: `{"operation":"status","work_id":"` + id + `"}`, want: BackgroundCommandArgs{Operation: "status", WorkID: id}},
		{name: "wait default", args: `{"operation":"wait","work_id":"` + id + `"}`, want: BackgroundCommandArgs{Operation: "wait", WorkID: id}},
		{name: "wait secs", args: `{"operation":"wait","work_id":"` + id + `","wait_secs":600}`, want: BackgroundCommandArgs{Operation: "wait", WorkID: id, WaitSecs: secs(600)}},
		{name: "wait zero", args: `{"operation":"wait","work_id":"` + id + `","wait_secs":0}`, want: BackgroundCommandArgs{Operation: "wait", WorkID: id, WaitSecs: secs(0)}},
		{name: "stop", args: `{"operation":"stop","work_id":"` + id + `"}`, want: BackgroundCommandArgs{Operation: "stop", WorkID: id}},
		{name: "bad operation", args: `{"operation":"kill","work_id":"` + id + `"}`, err: `background_command: field "operation": must be "status", "wait" or "stop", got "kill"`},
		{name: "missing operation", args: `{"work_id":"` + id + `"}`, err: `background_command: field "operation": required, but missing`},
		{name: "missing work id", args: `{"operation":"status"}`, err: `background_command: field "work_id": required, but missing`},
		{name: "short work id", args: `{"operation":"status","work_id":"wrk_123"}`, err: `background_command: field "work_id": must be "wrk_" and 16 lower-case hex digits, got "wrk_123"`},
		{name: "upper-case work id", args: `{"operation":"status","work_id":"wrk_0123456789ABCDEF"}`, err: `background_command: field "work_id": must be "wrk_" and 16 lower-case hex digits, got "wrk_0123456789ABCDEF"`},
		{name: "wrong prefix", args: `{"operation":"status","work_id":"ses_0123456789abcdef"}`, err: `background_command: field "work_id": must be "wrk_" and 16 lower-case hex digits, got "ses_0123456789abcdef"`},
		{name: "path in work id", args: `{"operation":"status","work_id":"wrk_../../../etc/x"}`, err: `background_command: field "work_id": must be "wrk_" and 16 lower-case hex digits, got "wrk_../../../etc/x"`},
		{name: "negative wait", args: `{"operation":"wait","work_id":"` + id + `","wait_secs":-1}`, err: `background_command: field "wait_secs": must not be negative, got -1`},
		{name: "long wait", args: `{"operation":"wait","work_id":"` + id + `","wait_secs":601}`, err: `background_command: field "wait_secs": must be at most 600 seconds, got 601`},
		{name: "wait secs on status", args: `{"operation":"status","work_id":"` + id + `","wait_secs":5}`, err: `background_command: field "wait_secs": applies only to operation "wait", got operation "status"`},
		{name: "unknown field", args: `{"operation":"status","work_id":"` + id + `","signal":9}`, err: `background_command: unknown field "signal"`},
	}
	d, ok := Lookup("background_command")
	if !ok {
		t.Fatal("background_command is not registered")
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := d.Parse(json.RawMessage(tt.args))
			if tt.err != "" {
				if err == nil || err.Error() != tt.err {
					t.Fatalf("Parse(%s) error = %v, want %q", tt.args, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%s): %v", tt.args, err)
			}
			if diff := cmp.Diff(tt.want, a); diff != "" {
				t.Errorf("Parse(%s) (-want +got):\n%s", tt.args, diff)
			}
		})
	}
}

// TestBackgroundCommandNeverRunsInSandbox: the runner has no background work
// to look at, so the tool only says it belongs to the broker.
func TestBackgroundCommandNeverRunsInSandbox(t *testing.T) {
	d, _ := Lookup("background_command")
	a, err := d.Parse(json.RawMessage(`{"operation":"stop","work_id":"wrk_0123456789abcdef"}`))
	if err != nil {
		t.Fatal(err)
	}
	out := d.Run(context.Background(), Env{Root: t.TempDir()}, a)
	if !out.IsError || out.Content != "background_command is answered by the broker that owns the background work; it cannot run inside a sandbox" {
		t.Errorf("Run = %+v", out)
	}
}
