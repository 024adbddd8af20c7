// Package results is the bench harness's record: one Row per measured cell
// (a workload on a system), appended as JSON lines by the harness's programs
// while bench/run.sh runs, then gathered into results.json and results.md.
package results

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"

	"github.com/airlockhq/airlock/bench/internal/proctree"
	"github.com/airlockhq/airlock/bench/internal/stats"
)

// Sections of the report.
const (
	Latency    = "latency"
	Throughput = "throughput"
	MemorySec  = "memory"
	// Egress is the download of one large body from a loopback server
	// through each system's way out to the network.
	Egress = "egress"
)

// Row is one cell: exactly one of Latency, Rate, Memory, Transfer or
// Skipped is set.
type Row struct {
	Section  string `json:"section"`
	Workload string `json:"workload"`
	System   string `json:"system"`
	// Latency of a single run (or, for a burst, of the whole burst).
	Latency *stats.Latency `json:"latency,omitempty"`
	// RatioP50 is Latency.P50Ms over the direct-exec floor's for the same
	// workload; the report fills it in.
	RatioP50 float64     `json:"ratio_p50,omitempty"`
	Rate     *stats.Rate `json:"rate,omitempty"`
	Memory   *Memory     `json:"memory,omitempty"`
	// Transfer is an Egress cell's download rates; SharePct its median
	// over the direct download's, in percent (the report fills it in).
	Transfer *stats.Transfer `json:"transfer,omitempty"`
	SharePct float64         `json:"share_pct,omitempty"`
	// Failed of Attempts calls failed (bursts and throughput, where a failed
	// call is counted rather than fatal); Note then holds the first error.
	Failed   int `json:"failed,omitempty"`
	Attempts int `json:"attempts,omitempty"`
	// Skipped says why the cell has no numbers.
	Skipped string `json:"skipped,omitempty"`
	// Timer is what took the samples (hyperfine or the Go driver).
	Timer string `json:"timer,omitempty"`
	Note  string `json:"note,omitempty"`
}

// Memory is a sandbox's (or a broker's) memory, in KiB.
type Memory struct {
	// LauncherRSSKiB/PSSKiB: the process the harness started (airlock exec,
	// bwrap, firejail, node for srt, codex).
	LauncherRSSKiB int `json:"launcher_rss_kib,omitempty"`
	LauncherPSSKiB int `json:"launcher_pss_kib,omitempty"`
	// HelpersRSSKiB/PSSKiB: every other process of the tree but the
	// workload itself (sandbox init, runner, proxies, shells).
	HelpersRSSKiB int `json:"helpers_rss_kib,omitempty"`
	HelpersPSSKiB int `json:"helpers_pss_kib,omitempty"`
	// UnsharedKiB: the anonymous and shmem PSS of the launcher and the
	// helpers together (proctree.Proc.UnsharedKiB): what one more sandbox
	// adds when another is already running the same binaries.
	UnsharedKiB int `json:"unshared_kib,omitempty"`
	// Session numbers (airlock session only).
	BrokerIdleRSSKiB int `json:"broker_idle_rss_kib,omitempty"`
	BrokerBusyRSSKiB int `json:"broker_busy_rss_kib,omitempty"`
	BrokerPeakRSSKiB int `json:"broker_peak_rss_kib,omitempty"`
	InFlight         int `json:"in_flight,omitempty"`
	// IdleProcs and IdlePSSKiB: the processes a session keeps while idle
	// (its warm pool's sandboxes) and their PSS.
	IdleProcs  int `json:"idle_procs,omitempty"`
	IdlePSSKiB int `json:"idle_pss_kib,omitempty"`
	// PerSandboxPSSKiB is HelpersPSSKiB over InFlight sandboxes.
	PerSandboxPSSKiB int             `json:"per_sandbox_pss_kib,omitempty"`
	Procs            []proctree.Proc `json:"procs,omitempty"`
}

// SetFailures records that failed of attempts calls failed, first first.
func (r *Row) SetFailures(failed, attempts int, first error) {
	if failed == 0 {
		return
	}
	r.Failed, r.Attempts = failed, attempts
	msg := fmt.Sprintf("%d of %d calls FAILED, first: %v", failed, attempts, first)
	if r.Note != "" {
		msg = r.Note + "; " + msg
	}
	r.Note = msg
}

// Append adds row to the JSON-lines file at path.
func Append(path string, row Row) error {
	b, err := json.Marshal(row)
	if err != nil {
		return fmt.Errorf("encoding a %s row: %w", row.System, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("opening %q: %w", path, err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("writing %q: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("closing %q: %w", path, err)
	}
	return nil
}

// ReadLines reads the rows of a JSON-lines file.
func ReadLines(path string) ([]Row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening %q: %w", path, err)
	}
	defer f.Close()
	var rows []Row
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for n := 1; sc.Scan(); n++ {
		var r Row
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		rows = append(rows, r)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %q: %w", path, err)
	}
	return rows, nil
}
