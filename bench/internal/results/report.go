package results

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

// Workloads in report order, with their titles.
var Workloads = []struct{ ID, Short, Title string }{
	{"true", "true", "`/bin/true`"},
	{"cat", "cat 4 KiB", "`cat` of a 4 KiB file in the granted directory"},
	{"read_file", "read_file", "a `read_file` tool call on that file (peers have no tool calls: their `cat` row is the equivalent)"},
	{"sh", "sh -c", "`sh -c 'echo hi; ls / >/dev/null'`"},
	{"mcp_read_file", "MCP read_file", "sequential `read_file` of that file through an MCP server (stdio, the Go SDK's client); direct is `cat` of it spawned by that same client process, call by call in between"},
	{"mcp_read_file_paused", "MCP read_file, 200 ms apart", "the same, each call after a 200 ms idle pause, as an agent's calls come between its model's turns"},
	{"mcp_read_file_ts", "MCP read_file, TS client", "sequential `read_file` of that file through an MCP server, driven by the official TypeScript SDK's client (node, over stdio); direct is `cat` of it spawned by that node process, call by call in between"},
	{"mcp_read_file_ts_paused", "MCP read_file, TS client, 200 ms apart", "the same through the TypeScript SDK's client, each call after a 200 ms idle pause"},
	{"burst50", "50× true", "concurrent `true` (50 at once; 10 in a smoke run): time until all have finished"},
}

// Floor is the system every ratio is taken against.
const Floor = "direct"

// Results is the whole run: what results.json holds.
type Results struct {
	// Meta is the run's context (date, host, load, command, versions), in
	// MetaOrder for the Markdown.
	Meta      map[string]string `json:"meta"`
	MetaOrder []string          `json:"-"`
	// Systems in report order.
	Systems []string `json:"systems"`
	Rows    []Row    `json:"rows"`
}

// Build orders rows by workload and systems and fills in each latency row's
// ratio to the floor's p50 for the same workload.
func Build(rows []Row, systems []string, meta map[string]string, metaOrder []string) *Results {
	floor := map[string]float64{}
	for _, r := range rows {
		if r.Section == Latency && r.System == Floor && r.Latency != nil {
			floor[r.Workload] = r.Latency.P50Ms
		}
	}
	var direct float64
	for _, r := range rows {
		if r.Section == Egress && r.System == Floor && r.Transfer != nil {
			direct = r.Transfer.P50MBps
		}
	}
	for i, r := range rows {
		if r.Section == Latency && r.Latency != nil && floor[r.Workload] > 0 {
			rows[i].RatioP50 = round1(r.Latency.P50Ms / floor[r.Workload])
		}
		if r.Section == Egress && r.Transfer != nil && direct > 0 {
			rows[i].SharePct = round1(100 * r.Transfer.P50MBps / direct)
		}
	}
	pos := func(list []string, s string) int {
		if i := slices.Index(list, s); i >= 0 {
			return i
		}
		return len(list)
	}
	var wl []string
	for _, w := range Workloads {
		wl = append(wl, w.ID)
	}
	sections := []string{Latency, Throughput, Egress, MemorySec}
	slices.SortStableFunc(rows, func(a, b Row) int {
		if d := pos(sections, a.Section) - pos(sections, b.Section); d != 0 {
			return d
		}
		if a.Section == Latency {
			if d := pos(wl, a.Workload) - pos(wl, b.Workload); d != 0 {
				return d
			}
		}
		return pos(systems, a.System) - pos(systems, b.System)
	})
	return &Results{Meta: meta, MetaOrder: metaOrder, Systems: systems, Rows: rows}
}

func round1(x float64) float64 { return float64(int64(x*10+0.5)) / 10 }

// Markdown writes the report.
func (r *Results) Markdown(w io.Writer) error {
	var b strings.Builder
	b.WriteString("| run | |\n|---|---|\n")
	for _, k := range r.MetaOrder {
		if v, ok := r.Meta[k]; ok {
			fmt.Fprintf(&b, "| %s | %s |\n", k, cell(v))
		}
	}
	b.WriteString("\n### p50 latency at a glance (ms; × direct exec in brackets)\n\n| system |")
	for _, w := range Workloads {
		fmt.Fprintf(&b, " %s |", w.Short)
	}
	b.WriteString("\n|---|" + strings.Repeat("---:|", len(Workloads)) + "\n")
	for _, s := range r.Systems {
		if !slices.ContainsFunc(r.Rows, func(row Row) bool { return row.Section == Latency && row.System == s }) {
			continue // only in other sections (the egress relay)
		}
		fmt.Fprintf(&b, "| %s |", s)
		for _, w := range Workloads {
			row, ok := r.find(Latency, w.ID, s)
			switch {
			case !ok:
				b.WriteString(" |")
			case row.Skipped != "":
				b.WriteString(" — |")
			case row.System == Floor:
				fmt.Fprintf(&b, " %s |", num(row.Latency.P50Ms))
			default:
				fmt.Fprintf(&b, " %s (%s×)%s |", num(row.Latency.P50Ms), num(row.RatioP50), failMark(row))
			}
		}
		b.WriteString("\n")
	}
	for _, w := range Workloads {
		fmt.Fprintf(&b, "\n### %s\n\n| system | p50 ms | p99 ms | min ms | × direct (p50) | runs | note |\n|---|---:|---:|---:|---:|---:|---|\n", w.Title)
		for _, row := range r.Rows {
			if row.Section != Latency || row.Workload != w.ID {
				continue
			}
			if row.Skipped != "" {
				fmt.Fprintf(&b, "| %s | — | — | — | — | — | skipped: %s |\n", row.System, cell(row.Skipped))
				continue
			}
			l := row.Latency
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %d | %s |\n", row.System, num(l.P50Ms), num(l.P99Ms), num(l.MinMs), num(row.RatioP50), l.N, cell(row.Note))
		}
	}
	b.WriteString("\n### Throughput (closed loop: each worker starts the next call when its last one ends)\n\n| system | workload | concurrency | calls/s | calls | seconds | note |\n|---|---|---:|---:|---:|---:|---|\n")
	for _, row := range r.Rows {
		if row.Section != Throughput {
			continue
		}
		if row.Skipped != "" {
			fmt.Fprintf(&b, "| %s | %s | | | | | skipped: %s |\n", row.System, row.Workload, cell(row.Skipped))
			continue
		}
		t := row.Rate
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %d | %s | %s |\n", row.System, row.Workload, t.Concurrency, num(t.PerSecond), t.Calls, num(t.Seconds), cell(row.Note))
	}
	egressSection(&b, r.Rows)
	b.WriteString("\n### Memory (KiB; RSS counts shared pages in full, PSS shares them out)\n\n| system | launcher RSS | launcher PSS | in-sandbox helpers RSS | helpers PSS | unshared (anon + shmem) | note |\n|---|---:|---:|---:|---:|---:|---|\n")
	var session []Row
	for _, row := range r.Rows {
		if row.Section != MemorySec {
			continue
		}
		if row.Skipped != "" {
			fmt.Fprintf(&b, "| %s | | | | | | skipped: %s |\n", row.System, cell(row.Skipped))
			continue
		}
		if row.Memory.InFlight > 0 {
			session = append(session, row)
			continue
		}
		m := row.Memory
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %s |\n", row.System, m.LauncherRSSKiB, m.LauncherPSSKiB, m.HelpersRSSKiB, m.HelpersPSSKiB, m.UnsharedKiB, cell(row.Note))
	}
	if len(session) > 0 {
		b.WriteString("\n| session (Go API) | broker RSS idle | idle processes (warm pool) | their PSS | broker RSS, calls in flight | broker peak RSS | in flight | sandbox helpers PSS, all | per sandbox PSS | note |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n")
		for _, row := range session {
			m := row.Memory
			fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %d | %d | %d | %s |\n", row.System, m.BrokerIdleRSSKiB, m.IdleProcs, m.IdlePSSKiB, m.BrokerBusyRSSKiB, m.BrokerPeakRSSKiB, m.InFlight, m.HelpersPSSKiB, m.PerSandboxPSSKiB, cell(row.Note))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// egressSection writes the egress table, if the run measured it.
func egressSection(b *strings.Builder, rows []Row) {
	var eg []Row
	for _, row := range rows {
		if row.Section == Egress {
			eg = append(eg, row)
		}
	}
	if len(eg) == 0 {
		return
	}
	b.WriteString("\n### Egress: one download from a loopback HTTP server, through each system's way out (MB/s as curl timed its transfer; share of direct)\n\n| system | MiB | p50 MB/s | min MB/s | max MB/s | % of direct (p50) | runs | note |\n|---|---:|---:|---:|---:|---:|---:|---|\n")
	for _, row := range eg {
		if row.Skipped != "" {
			fmt.Fprintf(b, "| %s | | | | | | | skipped: %s |\n", row.System, cell(row.Skipped))
			continue
		}
		t := row.Transfer
		fmt.Fprintf(b, "| %s | %d | %s | %s | %s | %s | %d | %s |\n", row.System, t.Bytes>>20, num(t.P50MBps), num(t.MinMBps), num(t.MaxMBps), num(row.SharePct), t.N, cell(row.Note))
	}
}

// failMark flags a cell where some calls failed.
func failMark(row Row) string {
	if row.Failed == 0 {
		return ""
	}
	return fmt.Sprintf(" ⚠ %d/%d failed", row.Failed, row.Attempts)
}

func (r *Results) find(section, workload, system string) (Row, bool) {
	for _, row := range r.Rows {
		if row.Section == section && row.Workload == workload && row.System == system {
			return row, true
		}
	}
	return Row{}, false
}

func num(x float64) string {
	switch {
	case x >= 100:
		return fmt.Sprintf("%.0f", x)
	case x >= 10:
		return fmt.Sprintf("%.1f", x)
	default:
		return fmt.Sprintf("%.2f", x)
	}
}

// cell makes s safe inside a Markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	return strings.ReplaceAll(s, "|", "\\|")
}
