package runner_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/internal/runner"
	"github.com/airlockhq/airlock/wire"
)

// TestFrameFitsTheOutputLimit: the frame the runner writes stays within
// what the broker lets a sandbox write for a call whose output limit is
// L (wire.SandboxOutputBytes: 2L + 64 KiB), whatever the text's JSON
// escapes cost: '<', '>' and '&' (six bytes each when escaped for HTML),
// control characters (six), and the \xNN a byte that is not UTF-8
// becomes (five, its backslash escaped). A result the tool capped at L
// must not get the call killed for its encoding.
func TestFrameFitsTheOutputLimit(t *testing.T) {
	dir := t.TempDir()
	const limit = 1 << 20 // the default
	files := map[string]string{
		"lt.html":   strings.Repeat("<", 2*limit),
		"amp.txt":   strings.Repeat("&>", limit),
		"ctrl.txt":  strings.Repeat("\x01\x1b", limit),
		"bytes.txt": strings.Repeat("match \xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8\xf7\n", limit/8),
		"mixed.txt": strings.Repeat("ok \u2028\"\\\x02<\n", limit/4),
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	calls := []struct{ tool, args string }{
		{"read_file", `{"path":"lt.html"}`},
		{"read_file", `{"path":"amp.txt"}`},
		{"read_file", `{"path":"ctrl.txt"}`},
		{"read_file", `{"path":"mixed.txt"}`},
		{"read_file", `{"path":"mixed.txt","tail":100000}`},
		{"grep", `{"pattern":"match","path":"bytes.txt","output_mode":"content"}`},
	}
	for _, c := range calls {
		ctx := wire.CallContext{CallID: "c1", Root: dir, Cwd: dir, Limits: wire.ToolLimits{OutputBytes: limit}}
		in := frame(t, wire.ToolInput{Tool: c.tool, Args: json.RawMessage(c.args), Context: ctx})
		var out, errOut bytes.Buffer
		if code := runner.Run(bytes.NewReader(in), &out, &errOut); code != wire.ExitOK {
			t.Errorf("%s %s: exit %d: %s", c.tool, c.args, code, errOut.String())
			continue
		}
		if budget := int(wire.SandboxOutputBytes(limit)); out.Len() > budget { // what internal/broker.SpecFor allows
			t.Errorf("%s %s: a %d-byte frame for an output limit of %d bytes; the sandbox lets the call write %d", c.tool, c.args, out.Len(), limit, budget)
		}
		p, err := wire.ReadFrame(&out)
		if err != nil {
			t.Fatal(err)
		}
		var got wire.ToolOutput
		if err := wire.DecodeStrict(p, &got); err != nil {
			t.Fatal(err)
		}
		if got.IsError || !got.Truncated && len(got.Content) < limit/2 {
			t.Errorf("%s %s: is_error=%v truncated=%v, %d bytes: %.200q", c.tool, c.args, got.IsError, got.Truncated, len(got.Content), got.Content)
		}
	}
}

// TestFrameFitsTheFrameLimit: an output limit larger than a frame can
// carry (the grant allows up to 1 GiB) gives a result cut to fit one,
// not a runner that fails to write its frame (ExitWriteOutput).
func TestFrameFitsTheFrameLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and reads a 66 MiB file")
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "big.txt"), bytes.Repeat([]byte("text line\n"), (wire.MaxFrameSize+2<<20)/10), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := wire.CallContext{CallID: "c1", Root: dir, Cwd: dir, Limits: wire.ToolLimits{OutputBytes: 512 << 20}}
	in := frame(t, wire.ToolInput{Tool: "read_file", Args: json.RawMessage(`{"path":"big.txt"}`), Context: ctx})
	var out, errOut bytes.Buffer
	if code := runner.Run(bytes.NewReader(in), &out, &errOut); code != wire.ExitOK {
		t.Fatalf("exit %d (%s): %s", code, wire.ExitName(code), errOut.String())
	}
	p, err := wire.ReadFrame(&out)
	if err != nil {
		t.Fatal(err)
	}
	var got wire.ToolOutput
	if err := wire.DecodeStrict(p, &got); err != nil {
		t.Fatal(err)
	}
	if !got.Truncated || got.Meta.OmittedBytes == 0 || !strings.HasPrefix(got.Content, "text line\n") {
		t.Errorf("truncated=%v omitted=%d, starts %.40q", got.Truncated, got.Meta.OmittedBytes, got.Content)
	}
}
