package runner_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/internal/runner"
	"github.com/airlockhq/airlock/wire"
)

// TestMain lets the test binary be the runner: with RUNNER_CHILD=1 it runs
// runner.Main on its own arguments, as `airlock __runner` would.
func TestMain(m *testing.M) {
	if os.Getenv("RUNNER_CHILD") == "1" {
		var args []string
		if len(os.Args) > 1 && os.Args[1] == "--" {
			args = os.Args[2:]
		}
		os.Exit(runner.Main(args, os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

func frame(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := wire.WriteFrame(&buf, b); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// runChild runs the runner as a real child process.
func runChild(t *testing.T, stdin []byte, stdout *os.File, args ...string) (code int, out, errOut string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"--"}, args...)...)
	cmd.Env = append(os.Environ(), "RUNNER_CHILD=1")
	cmd.Stdin = bytes.NewReader(stdin)
	var o, e bytes.Buffer
	if stdout != nil {
		cmd.Stdout = stdout
	} else {
		cmd.Stdout = &o
	}
	cmd.Stderr = &e
	err := cmd.Run()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		return ee.ExitCode(), o.String(), e.String()
	} else if err != nil {
		t.Fatalf("running the runner: %v", err)
	}
	return 0, o.String(), e.String()
}

func TestRunnerExitCodes(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "f.txt"), []byte("content\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := wire.CallContext{CallID: "c1", Root: dir, Cwd: dir}
	input := func(tool, args string) []byte {
		return frame(t, wire.ToolInput{Tool: tool, Args: json.RawMessage(args), Context: ctx})
	}
	tests := []struct {
		name    string
		stdin   []byte
		args    []string
		code    int
		errHas  string
		wantOut string
	}{
		{"ok", input("read_file", `{"path":"f.txt"}`), nil, wire.ExitOK, "", "content"},
		{"tool-level failure is ok", input("read_file", `{"path":"missing"}`), nil, wire.ExitOK, "", "missing"},
		{"cli args", input("read_file", `{"path":"f.txt"}`), []string{"--bogus"}, wire.ExitUsage, "takes no arguments", ""},
		{"empty stdin", nil, nil, wire.ExitBadInput, "reading input frame", ""},
		{"zero-length frame", []byte{0, 0, 0, 0}, nil, wire.ExitBadInput, "length is 0", ""},
		{"oversize frame", []byte{0xff, 0xff, 0xff, 0xff}, nil, wire.ExitBadInput, "exceeds 64 MiB", ""},
		{"short frame", []byte{0, 0, 0, 9, '{'}, nil, wire.ExitBadInput, "stream ended inside a frame", ""},
		{"not json", append([]byte{0, 0, 0, 3}, "{{{"...), nil, wire.ExitBadInput, "invalid JSON", ""},
		{"unknown input field", frame(t, map[string]any{"tool": "read_file", "args": map[string]any{}, "extra": 1}), nil, wire.ExitBadInput, `unknown field "extra"`, ""},
		{"unknown tool", input("rm_rf", `{}`), nil, wire.ExitUnknownTool, `unknown tool "rm_rf"`, ""},
		{"bad args", input("read_file", `{"path":"f.txt","offset":-3}`), nil, wire.ExitBadArgs, "offset", ""},
		{"unknown arg", input("read_file", `{"path":"f.txt","paht":"x"}`), nil, wire.ExitBadArgs, `"paht"`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runChild(t, tt.stdin, nil, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d (%s), want %d (%s); stderr %s", code, wire.ExitName(code), tt.code, wire.ExitName(tt.code), errOut)
			}
			if code != wire.ExitOK {
				var rep wire.ErrorReport
				if err := json.Unmarshal([]byte(strings.TrimSpace(errOut)), &rep); err != nil || rep.Code != code {
					t.Fatalf("stderr is not an ErrorReport with code %d: %q", code, errOut)
				}
				if !strings.Contains(rep.Error, tt.errHas) {
					t.Fatalf("error %q does not say %q", rep.Error, tt.errHas)
				}
				if out != "" {
					t.Fatalf("a failed runner wrote to stdout: %q", out)
				}
				return
			}
			p, err := wire.ReadFrame(strings.NewReader(out))
			if err != nil {
				t.Fatalf("reading the output frame: %v", err)
			}
			var got wire.ToolOutput
			if err := wire.DecodeStrict(p, &got); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(got.Content, tt.wantOut) {
				t.Fatalf("content %q does not hold %q", got.Content, tt.wantOut)
			}
		})
	}
}

// TestRunnerOutputWriteFailure: a closed stdout is exit 74, not a crash.
func TestRunnerOutputWriteFailure(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "f.txt"), []byte("x"), 0o644)
	in := frame(t, wire.ToolInput{Tool: "read_file", Args: json.RawMessage(`{"path":"f.txt"}`), Context: wire.CallContext{Root: dir, Cwd: dir}})
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close() // writes to w now fail with EPIPE
	defer w.Close()
	code, _, errOut := runChild(t, in, w)
	if code != wire.ExitWriteOutput {
		t.Fatalf("exit %d, want %d; stderr %s", code, wire.ExitWriteOutput, errOut)
	}
}
