package stats

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestSummarise(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name string
		in   []time.Duration
		want Latency
	}{
		{"empty", nil, Latency{}},
		{"one", []time.Duration{3 * ms}, Latency{N: 1, P50Ms: 3, P99Ms: 3, MinMs: 3, MeanMs: 3}},
		{"unsorted four", []time.Duration{4 * ms, 1 * ms, 3 * ms, 2 * ms}, Latency{N: 4, P50Ms: 2, P99Ms: 4, MinMs: 1, MeanMs: 2.5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Summarise(tt.in)); diff != "" {
				t.Errorf("Summarise (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRank(t *testing.T) {
	var s []time.Duration
	for i := 1; i <= 200; i++ {
		s = append(s, time.Duration(i))
	}
	for _, tt := range []struct {
		q    float64
		want time.Duration
	}{{0.5, 100}, {0.99, 198}, {1, 200}, {0, 1}} {
		if got := Rank(s, tt.q); got != tt.want {
			t.Errorf("Rank(1..200, %v) = %d, want %d", tt.q, got, tt.want)
		}
	}
}

func TestNewRate(t *testing.T) {
	got := NewRate(8, 50, 2*time.Second)
	want := Rate{Concurrency: 8, Calls: 50, Seconds: 2, PerSecond: 25}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("NewRate (-want +got):\n%s", diff)
	}
}

func TestSummariseTransfer(t *testing.T) {
	got := SummariseTransfer(1<<20, []float64{3e9, 1e9, 2e9, 4e9})
	want := Transfer{N: 4, Bytes: 1 << 20, P50MBps: 2000, MinMBps: 1000, MaxMBps: 4000}
	if got != want {
		t.Errorf("SummariseTransfer = %+v, want %+v", got, want)
	}
	if got := SummariseTransfer(5, nil); got.N != 0 || got.Bytes != 5 {
		t.Errorf("no samples: %+v", got)
	}
}
