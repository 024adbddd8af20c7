package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/bench/internal/results"
	"github.com/airlockhq/airlock/internal/testenv"
)

// TestMCPLatencyTypeScriptClient runs the mcp mode with the TypeScript
// SDK's client (node, bench/tsclient/mcp_read.mjs) against a real `airlock
// mcp` and the MCP floor: one row each and one for cat spawned by node,
// every one timed the asked number of times.
func TestMCPLatencyTypeScriptClient(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("airlock mcp's sandboxes need root here (or a delegated cgroup)")
	}
	sdk := filepath.Join(testenv.TypeScriptSDK(t), "node_modules", "@modelcontextprotocol", "sdk")
	bin := t.TempDir()
	for _, cmd := range []string{"airlock", "mcpfloor"} {
		pkg := "github.com/airlockhq/airlock/cmd/airlock"
		if cmd == "mcpfloor" {
			pkg = "github.com/airlockhq/airlock/bench/cmd/mcpfloor"
		}
		if out, err := exec.Command("go", "build", "-o", filepath.Join(bin, cmd), pkg).CombinedOutput(); err != nil {
			t.Fatalf("building %s: %v\n%s", cmd, err, out)
		}
	}
	script, err := filepath.Abs(filepath.Join("..", "..", "tsclient", "mcp_read.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	text := strings.Repeat("a line of the file read through MCP\n", 100)
	if err := os.WriteFile(filepath.Join(dir, "data.txt"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "rows.jsonl")
	err = run([]string{"-mode", "mcp", "-client", "ts", "-ts-script", script, "-ts-sdk", sdk,
		"-out", out, "-dir", dir, "-file", "data.txt", "-workload", "mcp_read_file_ts", "-n", "4", "-warmup", "1",
		"-server", "airlock mcp=" + filepath.Join(bin, "airlock") + " mcp --records " + t.TempDir(),
		"-server", "mcpfloor (Go SDK)=" + filepath.Join(bin, "mcpfloor")})
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	got := map[string]results.Row{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r results.Row
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("row %q: %v", sc.Text(), err)
		}
		got[r.System] = r
	}
	for _, s := range []string{results.Floor, "airlock mcp", "mcpfloor (Go SDK)"} {
		r, ok := got[s]
		switch {
		case !ok:
			t.Errorf("no row for %s: %v", s, got)
		case r.Latency == nil || r.Latency.N != 4 || r.Latency.P50Ms <= 0:
			t.Errorf("%s: latency %+v, want 4 timed calls", s, r.Latency)
		case r.Workload != "mcp_read_file_ts" || !strings.Contains(r.Timer, "TypeScript"):
			t.Errorf("%s: workload %q timer %q", s, r.Workload, r.Timer)
		}
	}
	if n := got["airlock mcp"].Note; !strings.Contains(n, "TypeScript SDK client") {
		t.Errorf("airlock mcp's note %q does not name the client", n)
	}
}
