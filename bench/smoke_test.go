package bench

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/bench/internal/results"
)

// TestSmoke runs `bench/run.sh --smoke` (what CI runs to keep the harness
// working) and checks its results.json: every system has rows, every row has
// numbers or a reason, and the floor and airlock's own cells have numbers.
func TestSmoke(t *testing.T) {
	if os.Getenv("AIRLOCK_BENCH_SMOKE") != "1" {
		t.Skip("set AIRLOCK_BENCH_SMOKE=1 to run bench/run.sh --smoke")
	}
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, "./run.sh", "--smoke", "--out", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("run.sh --smoke: %v\n%s", err, b)
	}
	t.Logf("run.sh --smoke took %v", time.Since(start).Round(time.Second))
	b, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res results.Results
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatalf("results.json does not parse: %v", err)
	}
	if len(res.Systems) < 9 {
		t.Errorf("results.json lists systems %q, want all of them", res.Systems)
	}
	rows := map[string]int{}
	for _, r := range res.Rows {
		rows[r.System]++
		if r.Latency == nil && r.Rate == nil && r.Memory == nil && r.Transfer == nil && r.Skipped == "" {
			t.Errorf("row %s / %s / %s has neither numbers nor a skip reason", r.Section, r.Workload, r.System)
		}
	}
	for _, s := range res.Systems {
		if rows[s] == 0 {
			t.Errorf("system %q has no rows", s)
		}
	}
	for _, want := range []struct{ workload, system string }{
		{"true", "direct"}, {"true", "airlock exec"}, {"read_file", "airlock call"},
		{"read_file", "airlock session"}, {"mcp_read_file", "airlock mcp"}, {"mcp_read_file", "direct"},
		{"mcp_read_file_paused", "airlock mcp"}, {"mcp_read_file_paused", "mcpfloor (Go SDK)"},
	} {
		if !hasNumbers(res.Rows, want.workload, want.system) {
			t.Errorf("no latency numbers for %s on %s", want.workload, want.system)
		}
	}
	for _, system := range []string{"direct", "airlock exec"} {
		if !hasTransfer(res.Rows, system) {
			t.Errorf("no egress download numbers for %s", system)
		}
	}
	md, err := os.ReadFile(filepath.Join(out, "results.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range res.Systems {
		if !strings.Contains(string(md), "| "+s+" |") {
			t.Errorf("results.md has no row for %q", s)
		}
	}
}

func hasNumbers(rows []results.Row, workload, system string) bool {
	for _, r := range rows {
		if r.Section == results.Latency && r.Workload == workload && r.System == system {
			return r.Latency != nil && r.Latency.P50Ms > 0
		}
	}
	return false
}

func hasTransfer(rows []results.Row, system string) bool {
	for _, r := range rows {
		if r.Section == results.Egress && r.System == system {
			return r.Transfer != nil && r.Transfer.P50MBps > 0
		}
	}
	return false
}
