package broker

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/wire"
)

func frameOf(t *testing.T, out wire.ToolOutput) []byte {
	t.Helper()
	b, _ := json.Marshal(out)
	var buf bytes.Buffer
	if err := wire.WriteFrame(&buf, b); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestClassify: every way a runner can end becomes one class and one fixed
// sentence, and no runner stderr or Go error text reaches the model.
func TestClassify(t *testing.T) {
	secretish := `{"code":70,"error":"panic: /home/alice/.ssh/id_rsa: token=abc"}`
	ok := frameOf(t, wire.ToolOutput{Content: "file text"})
	tests := []struct {
		name      string
		res       sandbox.Result
		stdout    []byte
		cancelled bool
		class     wire.Class
		content   string
	}{
		{"ok", sandbox.Result{ExitCode: 0}, ok, false, ClassOK, "file text"},
		{"ok, processes hit", sandbox.Result{ExitCode: 0, LimitsHit: []wire.Limit{"processes"}}, ok, false, ClassOK, "file text"},
		{"time, processes hit", sandbox.Result{ExitCode: -1, Signal: 9, Limit: "time", LimitsHit: []wire.Limit{"time", "processes"}}, nil, false, ClassTimeout, SentenceTimeout},
		{"time", sandbox.Result{ExitCode: -1, Signal: 9, Limit: "time", LimitsHit: []wire.Limit{"time"}}, nil, false, ClassTimeout, SentenceTimeout},
		{"memory", sandbox.Result{ExitCode: -1, Signal: 9, Limit: "memory", LimitsHit: []wire.Limit{"memory"}}, nil, false, ClassMemory, SentenceMemory},
		{"processes", sandbox.Result{ExitCode: 1, Limit: "processes", LimitsHit: []wire.Limit{"processes"}}, nil, false, ClassProcesses, SentenceProcesses},
		{"output", sandbox.Result{ExitCode: -1, Signal: 9, Limit: "output", LimitsHit: []wire.Limit{"output"}}, nil, false, ClassOutput, SentenceOutput},
		{"disk", sandbox.Result{ExitCode: -1, Signal: 9, Limit: "disk", LimitsHit: []wire.Limit{"disk"}}, nil, false, ClassKilled, SentenceDisk},
		{"killed", sandbox.Result{ExitCode: -1, Signal: 9}, nil, false, ClassKilled, SentenceKilled},
		{"cancelled", sandbox.Result{ExitCode: -1, Signal: 9}, nil, true, ClassCancelled, SentenceCancelled},
		{"internal error", sandbox.Result{ExitCode: wire.ExitInternal}, nil, false, ClassRunner, SentenceCannotRun},
		{"bad input", sandbox.Result{ExitCode: wire.ExitBadInput}, nil, false, ClassRunner, SentenceCannotRun},
		{"unknown tool", sandbox.Result{ExitCode: wire.ExitUnknownTool}, nil, false, ClassRunner, SentenceCannotRun},
		{"exit 0 without a frame", sandbox.Result{ExitCode: 0}, nil, false, ClassRunner, SentenceCannotRun},
		{"exit 0 with garbage", sandbox.Result{ExitCode: 0}, []byte("\x00\x00\x00\x05hello"), false, ClassRunner, SentenceCannotRun},
		{"exit 0 with a lying frame", sandbox.Result{ExitCode: 0}, []byte("\x04\x00\x00\x00{}"), false, ClassRunner, SentenceCannotRun},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancelled {
				cancel()
			}
			o := classify(ctx, &tt.res, tt.stdout, secretish)
			if o.Class != tt.class {
				t.Fatalf("class = %s, want %s", o.Class, tt.class)
			}
			if o.Output.Content != tt.content {
				t.Fatalf("content = %q, want %q", o.Output.Content, tt.content)
			}
			if !slices.Equal(o.Output.Meta.LimitsHit, tt.res.LimitsHit) {
				t.Fatalf("Meta.LimitsHit = %q, want %q", o.Output.Meta.LimitsHit, tt.res.LimitsHit)
			}
			if tt.class != ClassOK && !o.Output.IsError {
				t.Fatalf("a failed call is not marked IsError")
			}
			if strings.Contains(o.Output.Content, "id_rsa") || strings.Contains(o.Output.Content, "panic") {
				t.Fatalf("runner stderr reached the model: %q", o.Output.Content)
			}
			if tt.class == ClassRunner && o.Detail == "" {
				t.Fatalf("a runner failure has no detail for the audit record")
			}
		})
	}
}
