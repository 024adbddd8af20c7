package results

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/bench/internal/stats"
	"github.com/google/go-cmp/cmp"
)

func TestBuildRatiosAndOrder(t *testing.T) {
	rows := []Row{
		{Section: MemorySec, System: "bwrap", Memory: &Memory{LauncherRSSKiB: 2000}},
		{Section: Latency, Workload: "true", System: "bwrap", Latency: &stats.Latency{N: 3, P50Ms: 30}},
		{Section: Latency, Workload: "cat", System: "direct", Latency: &stats.Latency{N: 3, P50Ms: 4}},
		{Section: Latency, Workload: "true", System: "direct", Latency: &stats.Latency{N: 3, P50Ms: 2}},
		{Section: Latency, Workload: "cat", System: "bwrap", Skipped: "not installed"},
	}
	res := Build(rows, []string{"direct", "bwrap"}, map[string]string{"date": "today"}, []string{"date"})
	type key struct {
		Section, Workload, System string
		Ratio                     float64
	}
	var got []key
	for _, r := range res.Rows {
		got = append(got, key{r.Section, r.Workload, r.System, r.RatioP50})
	}
	want := []key{
		{Latency, "true", "direct", 1},
		{Latency, "true", "bwrap", 15},
		{Latency, "cat", "direct", 1},
		{Latency, "cat", "bwrap", 0},
		{MemorySec, "", "bwrap", 0},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Build rows (-want +got):\n%s", diff)
	}
	var md bytes.Buffer
	if err := res.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"| date | today |",
		"| bwrap | 30.0 (15.0×) | — |",
		"| bwrap | — | — | — | — | — | skipped: not installed |",
		"| bwrap | 2000 | 0 | 0 | 0 | 0 |  |",
	} {
		if !strings.Contains(md.String(), line+"\n") && !strings.Contains(md.String(), line) {
			t.Errorf("Markdown has no line %q:\n%s", line, md.String())
		}
	}
}

func TestAppendReadLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cells.jsonl")
	want := []Row{
		{Section: Latency, Workload: "true", System: "direct", Latency: &stats.Latency{N: 1, P50Ms: 1, P99Ms: 1, MinMs: 1, MeanMs: 1}},
		{Section: Latency, Workload: "true", System: "srt", Skipped: "does not run | here"},
	}
	for _, r := range want {
		if err := Append(path, r); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ReadLines(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ReadLines (-want +got):\n%s", diff)
	}
}

func TestEgressShares(t *testing.T) {
	rows := []Row{
		{Section: Egress, Workload: "download", System: "airlock exec", Transfer: &stats.Transfer{N: 3, Bytes: 256 << 20, P50MBps: 1300, MinMBps: 1100, MaxMBps: 1500}},
		{Section: Egress, Workload: "download", System: "direct", Transfer: &stats.Transfer{N: 3, Bytes: 256 << 20, P50MBps: 2600, MinMBps: 2000, MaxMBps: 3000}},
		{Section: Egress, Workload: "download", System: "srt", Skipped: "not installed"},
		{Section: Egress, Workload: "download", System: "relay", Transfer: &stats.Transfer{N: 3, Bytes: 256 << 20, P50MBps: 1200, MinMBps: 1100, MaxMBps: 1300}},
		{Section: Latency, Workload: "true", System: "direct", Latency: &stats.Latency{N: 3, P50Ms: 1}},
	}
	res := Build(rows, []string{"direct", "srt", "airlock exec", "relay"}, nil, nil)
	var order []string
	for _, r := range res.Rows {
		order = append(order, r.System)
	}
	if diff := cmp.Diff([]string{"direct", "direct", "srt", "airlock exec", "relay"}, order); diff != "" {
		t.Errorf("rows' order (-want +got):\n%s", diff)
	}
	if got := res.Rows[3].SharePct; got != 50 {
		t.Errorf("airlock's share of direct = %v, want 50", got)
	}
	var md bytes.Buffer
	if err := res.Markdown(&md); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"| direct | 256 | 2600 | 2000 | 3000 | 100 | 3 |  |",
		"| airlock exec | 256 | 1300 | 1100 | 1500 | 50.0 | 3 |  |",
		"| srt | | | | | | | skipped: not installed |",
	} {
		if !strings.Contains(md.String(), line+"\n") {
			t.Errorf("Markdown has no line %q:\n%s", line, md.String())
		}
	}
	// The latency glance lists only systems with latency rows.
	glance, _, _ := strings.Cut(md.String()[strings.Index(md.String(), "at a glance"):], "\n### ")
	if strings.Contains(glance, "| relay |") || !strings.Contains(glance, "| direct |") {
		t.Errorf("latency glance:\n%s", glance)
	}
}
