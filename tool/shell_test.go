//go:build unix

package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/wire"
	"github.com/google/go-cmp/cmp"
)

func TestShell(t *testing.T) {
	w := newWorkspace(t)
	mustSymlink(t, "../outside", filepath.Join(w.root, "out-dir"))
	limits := func(l wire.ToolLimits) Env { e := w.env(); e.Limits = l; return e }
	exit := func(n int) *int { return &n }
	tests := []struct {
		name     string
		env      Env
		args     string
		want     check
		exact    string
		exitCode *int
		signal   int
		golden   bool
	}{
		{name: "ordered_output", args: `{"command":"echo out1; echo err1 >&2; echo out2"}`, exact: "out1\nerr1\nout2\n[exit 0]", exitCode: exit(0), golden: true},
		{name: "nonzero_exit_is_not_an_error", args: `{"command":"echo failing; exit 3"}`, exact: "failing\n[exit 3]", exitCode: exit(3), golden: true},
		{name: "no_trailing_newline", args: `{"command":"printf abc"}`, exact: "abc\n[exit 0]", exitCode: exit(0)},
		{name: "cwd", args: `{"command":"pwd","cwd":"sub"}`, exact: filepath.Join(w.root, "sub") + "\n[exit 0]", exitCode: exit(0)},
		{name: "default_cwd", args: `{"command":"pwd"}`, exact: w.root + "\n[exit 0]", exitCode: exit(0)},
		{name: "stdin_is_devnull", args: `{"command":"cat; echo done"}`, exact: "done\n[exit 0]", exitCode: exit(0)},
		{name: "signal", args: `{"command":"kill -TERM $$"}`, want: check{isError: true}, exact: "[killed by signal 15]", signal: 15},
		{name: "timeout", args: `{"command":"echo before; sleep 5","timeout":1}`, want: check{isError: true}, exact: "before\n[timed out after 1s]\n[killed by signal 9]", signal: 9, golden: true},
		{name: "call_limit_below_timeout", env: limits(wire.ToolLimits{TimeoutMS: 300}), args: `{"command":"sleep 5","timeout":5}`, want: check{isError: true}, exact: "[timed out after 0.3s]\n[killed by signal 9]", signal: 9},
		{name: "head_and_tail", env: limits(wire.ToolLimits{OutputBytes: 1000}), args: `{"command":"seq 1 1000"}`, want: check{contains: []string{"\n[... 2893 bytes cut ...]\n"}}, exitCode: exit(0)},
		{name: "output_flood_killed", env: limits(wire.ToolLimits{OutputBytes: 1000}), args: `{"command":"yes"}`, want: check{isError: true, contains: []string{"[output passed 8000 bytes; the command was killed]", "[killed by signal"}}, signal: 9},
		{name: "background_unavailable", args: `{"command":"sleep 1","run_in_background":true}`, want: check{isError: true}, exact: `field "run_in_background": background commands are not available in this context`},
		{name: "cwd_traversal", args: `{"command":"pwd","cwd":"../outside"}`, want: check{isError: true, contains: []string{`field "cwd": "../outside" lies outside the allowed root`}}},
		{name: "cwd_double_slash", args: `{"command":"pwd","cwd":"//etc"}`, want: check{isError: true, contains: []string{`field "cwd"`, "lies outside"}}},
		{name: "cwd_prefix_confusion", args: fmt.Sprintf(`{"command":"pwd","cwd":%q}`, w.evil), want: check{isError: true, contains: []string{"lies outside"}}},
		{name: "cwd_symlink_outside", args: `{"command":"pwd","cwd":"out-dir"}`, want: check{isError: true, contains: []string{"leads outside the allowed root"}}},
		{name: "cwd_is_file", args: `{"command":"pwd","cwd":"hello.txt"}`, want: check{isError: true, contains: []string{"is a regular file, not a directory"}}},
		{name: "cwd_missing", args: `{"command":"pwd","cwd":"nope"}`, want: check{isError: true, contains: []string{`field "cwd": no such file or directory`}}},
		{name: "empty_command", args: `{"command":"  "}`, want: check{isError: true, contains: []string{`field "command": must not be empty`}}},
		{name: "timeout_too_long", args: `{"command":"true","timeout":601}`, want: check{isError: true, contains: []string{`field "timeout": must be between 1 and 600 seconds, got 601`}}},
		{name: "timeout_negative", args: `{"command":"true","timeout":-1}`, want: check{isError: true, contains: []string{`got -1`}}},
		{name: "timeout_fraction", args: `{"command":"true","timeout":1.5}`, want: check{isError: true, contains: []string{`field "timeout": expected int, got JSON number`}}},
		{name: "unknown_field", args: `{"command":"true","env":{"A":"b"}}`, want: check{isError: true, contains: []string{`unknown field "env"`}}},
		{name: "case_only_key", args: `{"Command":"true"}`, want: check{isError: true, contains: []string{`use "command"`}}},
		{name: "missing_command", args: `{}`, want: check{isError: true, contains: []string{`field "command": required, but missing`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := tt.env
			if env.Root == "" {
				env = w.env()
			}
			start := time.Now()
			out := call(t, env, "shell", tt.args)
			if el := time.Since(start); el > 5*time.Second {
				t.Errorf("took %v", el)
			}
			tt.want.verify(t, out)
			if tt.exact != "" && out.Content != tt.exact {
				t.Errorf("content:\n%q\nwant:\n%q", out.Content, tt.exact)
			}
			if tt.name == "head_and_tail" {
				if !strings.HasPrefix(out.Content, "1\n2\n3\n") || !strings.HasSuffix(out.Content, "\n999\n1000\n[exit 0]") || !out.Truncated || out.Meta.OmittedBytes != 2893 {
					t.Errorf("want head, tail and 2893 omitted bytes; Truncated=%v Omitted=%d\n%s", out.Truncated, out.Meta.OmittedBytes, out.Content)
				}
			}
			if strings.HasPrefix(out.Content, "parse:") {
				return
			}
			if d := cmp.Diff(tt.exitCode, out.Meta.ExitCode); d != "" {
				t.Errorf("Meta.ExitCode (-want +got):\n%s", d)
			}
			if out.Meta.Signal != tt.signal {
				t.Errorf("Meta.Signal = %d, want %d", out.Meta.Signal, tt.signal)
			}
			if tt.golden {
				golden(t, "shell_"+tt.name+".golden", render(out, w.base))
			}
		})
	}
}

// TestShellReturnsWhenGrandchildHoldsPipe: a background grandchild keeps the
// output pipe open; the call must end shortly after the shell does, and the
// grandchild must be killed.
func TestShellReturnsWhenGrandchildHoldsPipe(t *testing.T) {
	w := newWorkspace(t)
	start := time.Now()
	out := call(t, w.env(), "shell", `{"command":"sleep 100 & echo $!"}`)
	// Not the grandchild's 100 s: the call ended with the shell (a loose
	// bound, so a loaded machine cannot fail it).
	if el := time.Since(start); el > 60*time.Second {
		t.Fatalf("took %v: the call waited for the grandchild", el)
	}
	pidText, rest, _ := strings.Cut(out.Content, "\n")
	if rest != "[exit 0]" || out.IsError {
		t.Fatalf("content %q, IsError %v", out.Content, out.IsError)
	}
	pid, err := strconv.Atoi(pidText)
	if err != nil {
		t.Fatalf("no pid in %q", out.Content)
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil || strings.Contains(string(b), ") Z ") {
			return // gone, or a zombie waiting for its new parent
		}
		if time.Now().After(deadline) {
			t.Fatalf("grandchild %d still running: %s", pid, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestShellBackgroundIsTheBrokers: the runner starts no background work
// (the broker owns it and answers run_in_background itself); a call that
// reaches the runner anyway is a model-readable failure, and nothing runs.
func TestShellBackgroundIsTheBrokers(t *testing.T) {
	w := newWorkspace(t)
	out := call(t, w.env(), "shell", `{"command":"touch ran","cwd":"sub","run_in_background":true}`)
	if !out.IsError || out.Content != `field "run_in_background": background commands are not available in this context` {
		t.Errorf("got IsError=%v %q", out.IsError, out.Content)
	}
	if _, err := os.Stat(filepath.Join(w.root, "sub", "ran")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the command ran: stat: %v", err)
	}
}

func TestShellStopsWithContext(t *testing.T) {
	w := newWorkspace(t)
	d, _ := Lookup("shell")
	a, err := d.Parse(json.RawMessage(`{"command":"sleep 10"}`))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	out := d.Run(ctx, w.env(), a)
	if el := time.Since(start); el > 3*time.Second || !out.IsError || !strings.Contains(out.Content, "[stopped: context deadline exceeded]") {
		t.Errorf("after %v: IsError=%v %q", el, out.IsError, out.Content)
	}
}

// TestShellOverflowSaysWhatIsTrue: when a command passed the output cap but
// exited on its own before the kill landed, the result does not say it was
// killed and then "[exit 0]"; when the kill ended it, it says so.
func TestShellOverflowSaysWhatIsTrue(t *testing.T) {
	out := newHeadTail(16)
	out.Write([]byte(strings.Repeat("x", 200)))
	res := renderShell(out, nil, shellEnd{overflow: true, hard: 128})
	if strings.Contains(res.Content, "was killed") || !strings.HasSuffix(res.Content, "[output passed 128 bytes; the rest was dropped]\n[exit 0]") {
		t.Errorf("exited before the kill: %q", res.Content)
	}
	if !res.IsError || res.Meta.Limit != "output" {
		t.Errorf("exited before the kill: IsError %v, Limit %q", res.IsError, res.Meta.Limit)
	}
	cmd := exec.Command("/bin/sh", "-c", "kill -9 $$")
	err := cmd.Run()
	res = renderShell(newHeadTail(16), err, shellEnd{overflow: true, hard: 128})
	if !strings.HasSuffix(res.Content, "[output passed 128 bytes; the command was killed]\n[killed by signal 9]") {
		t.Errorf("killed: %q", res.Content)
	}
}
