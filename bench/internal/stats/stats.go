// Package stats summarises latency samples and reads process memory for the
// bench harness. Its JSON shapes are what bench/run.sh collects into
// results.json, so the harness's Go programs and its report agree on them.
package stats

import (
	"math"
	"sort"
	"time"
)

// Latency summarises N timed runs of one cell (a workload on a system).
type Latency struct {
	// N is the number of timed runs.
	N int `json:"n"`
	// P50Ms and P99Ms are nearest-rank percentiles in milliseconds; with
	// fewer than 100 runs P99 is the slowest run.
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
	// MinMs is the fastest run, MeanMs the arithmetic mean.
	MinMs  float64 `json:"min_ms"`
	MeanMs float64 `json:"mean_ms"`
}

// Summarise returns the percentiles of samples (which it sorts).
func Summarise(samples []time.Duration) Latency {
	if len(samples) == 0 {
		return Latency{}
	}
	sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
	var sum time.Duration
	for _, d := range samples {
		sum += d
	}
	return Latency{
		N:      len(samples),
		P50Ms:  ms(Rank(samples, 0.50)),
		P99Ms:  ms(Rank(samples, 0.99)),
		MinMs:  ms(samples[0]),
		MeanMs: ms(sum / time.Duration(len(samples))),
	}
}

// Rank returns the nearest-rank q-quantile of sorted samples: the smallest
// sample with at least q of the samples at or below it.
func Rank(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(sorted)))) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

func ms(d time.Duration) float64 { return math.Round(float64(d.Microseconds())) / 1000 }

// Rate is a throughput measurement: Calls completed by Concurrency closed-loop
// workers in Seconds.
type Rate struct {
	Concurrency int     `json:"concurrency"`
	Calls       int     `json:"calls"`
	Seconds     float64 `json:"seconds"`
	PerSecond   float64 `json:"per_second"`
}

// NewRate fills in PerSecond.
func NewRate(concurrency, calls int, elapsed time.Duration) Rate {
	s := elapsed.Seconds()
	return Rate{Concurrency: concurrency, Calls: calls, Seconds: round(s, 2), PerSecond: round(float64(calls)/s, 1)}
}

func round(x float64, places int) float64 {
	p := math.Pow(10, float64(places))
	return math.Round(x*p) / p
}

// Transfer summarises N timed downloads of one cell, in MB/s (10^6 bytes a
// second) as the client measured them: its own transfer, not its start.
type Transfer struct {
	N       int     `json:"n"`
	Bytes   int64   `json:"bytes"`
	P50MBps float64 `json:"p50_mbps"`
	MinMBps float64 `json:"min_mbps"`
	MaxMBps float64 `json:"max_mbps"`
}

// SummariseTransfer returns the median, slowest and fastest of rates
// (bytes a second, which it sorts) of downloads of bytes each.
func SummariseTransfer(bytes int64, rates []float64) Transfer {
	if len(rates) == 0 {
		return Transfer{Bytes: bytes}
	}
	sort.Float64s(rates)
	mb := func(r float64) float64 { return round(r/1e6, 1) }
	return Transfer{
		N: len(rates), Bytes: bytes,
		P50MBps: mb(rates[int(math.Ceil(0.5*float64(len(rates))))-1]),
		MinMBps: mb(rates[0]), MaxMBps: mb(rates[len(rates)-1]),
	}
}
