package tool

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/wire"
	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// canary is the content of the file outside the root; no output may hold it.
const canary = "CANARY-5f1d0c9e7a3b"

// A workspace is a root directory for the tools with an outside neighbour.
type workspace struct {
	base    string // holds ws, ws-evil and outside
	root    string // base/ws: Env.Root and Env.Cwd
	outside string // base/outside: holds the canary, never reachable
	evil    string // base/ws-evil: a prefix-confusion neighbour
}

// newWorkspace makes a workspace with files the tests share.
func newWorkspace(t *testing.T) workspace {
	t.Helper()
	base := t.TempDir()
	w := workspace{
		base:    base,
		root:    filepath.Join(base, "ws"),
		outside: filepath.Join(base, "outside"),
		evil:    filepath.Join(base, "ws-evil"),
	}
	for _, d := range []string{w.root, w.outside, w.evil, filepath.Join(w.root, "sub")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	w.write(t, "../outside/secret.txt", canary+"\n")
	w.write(t, "../ws-evil/secret.txt", canary+"\n")
	w.write(t, "hello.txt", "line one\nline two\nline three\n")
	w.write(t, "sub/a.go", "package sub\n\nfunc A() {}\n")
	return w
}

func (w workspace) env() Env { return Env{Root: w.root, Cwd: w.root} }

// write creates rel (relative to root) with content.
func (w workspace) write(t *testing.T, rel, content string) string {
	t.Helper()
	p := filepath.Join(w.root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// call parses raw for tool name and runs it. A parse error becomes an
// IsError output with the error's text, as the broker would report it.
func call(t *testing.T, env Env, name, raw string) wire.ToolOutput {
	t.Helper()
	d, ok := Lookup(name)
	if !ok {
		t.Fatalf("no tool %q", name)
	}
	a, err := d.Parse(json.RawMessage(raw))
	if err != nil {
		return wire.ToolOutput{Content: "parse: " + err.Error(), IsError: true}
	}
	return d.Run(context.Background(), env, a)
}

// noCanary fails if out holds the canary.
func noCanary(t *testing.T, out wire.ToolOutput) {
	t.Helper()
	if strings.Contains(out.Content, canary) {
		t.Errorf("output holds the canary: %q", out.Content)
	}
}

// render is the golden-file form of a result, with base replaced by $BASE.
func render(out wire.ToolOutput, base string) string {
	meta, _ := json.Marshal(out.Meta)
	s := fmt.Sprintf("is_error: %v\ntruncated: %v\nmeta: %s\n-- content --\n%s\n", out.IsError, out.Truncated, meta, out.Content)
	return strings.ReplaceAll(s, base, "$BASE")
}

// golden compares got with testdata/golden/name, rewriting it under -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("reading golden file (run with -update to create it): %v", err)
	}
	if d := cmp.Diff(string(want), got); d != "" {
		t.Errorf("%s differs (-want +got):\n%s", p, d)
	}
}

// check is one expectation on a tool result.
type check struct {
	isError  bool
	contains []string // substrings of Content
	exact    string   // the whole Content, when not empty
}

func (c check) verify(t *testing.T, out wire.ToolOutput) {
	t.Helper()
	if out.IsError != c.isError {
		t.Errorf("IsError = %v, want %v; content:\n%s", out.IsError, c.isError, out.Content)
	}
	for _, s := range c.contains {
		if !strings.Contains(out.Content, s) {
			t.Errorf("content lacks %q; content:\n%s", s, out.Content)
		}
	}
	if c.exact != "" && out.Content != c.exact {
		t.Errorf("content = %q, want %q", out.Content, c.exact)
	}
	noCanary(t, out)
}

func mustUnmarshal(t *testing.T, raw string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(raw), v); err != nil {
		t.Fatal(err)
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}
