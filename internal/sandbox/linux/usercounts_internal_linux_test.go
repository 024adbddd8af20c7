package linux

import (
	"slices"
	"testing"

	"github.com/airlockhq/airlock/internal/sandbox/linux/initproto"
	"github.com/airlockhq/airlock/internal/sandbox/peruser"
)

// TestCountLedgerKeepsHalf: however many sandboxes reserve at once, their
// shares of a known limit add up to at most its budget (half the user's
// limit), each is at most peruser's bound, the first ones get some, and
// releasing them gives it all back.
func TestCountLedgerKeepsHalf(t *testing.T) {
	bound := peruser.Counts[0]
	l := countLedger{bounds: userBounds, budget: map[string]int{bound.Name: 64}, used: map[string]int{}}
	var shares []int
	var all [][]initproto.UserCount
	total := 0
	for range 20 {
		r := l.reserve(100)
		all = append(all, r)
		for _, c := range r {
			if c.Name != bound.Name {
				continue
			}
			if c.Max < 0 || c.Max > bound.Max {
				t.Errorf("a share of %d of %s, want 0..%d", c.Max, bound.Name, bound.Max)
			}
			shares = append(shares, c.Max)
			total += c.Max
		}
	}
	if total > 64 || len(shares) != 20 || shares[0] == 0 || shares[4] == 0 {
		t.Errorf("20 sandboxes' shares of a budget of 64: %v (%d), want at most 64 together and the first five some", shares, total)
	}
	for _, r := range all {
		l.release(r)
	}
	if l.used[bound.Name] != 0 {
		t.Errorf("%d still used after every release", l.used[bound.Name])
	}
	if r := l.reserve(100); r[0].Max != min(bound.Max, 32) {
		t.Errorf("after the releases a sandbox gets %d, want %d", r[0].Max, min(bound.Max, 32))
	}
}

// TestCountLedgerProcesses: a sandbox's share of the user's processes is
// its own process limit while half of what is left covers it, then half
// of what is left, but never below the init's own threads (a share below
// them ends the sandbox rather than refusing its command a process), nor
// above the sandbox's own limit.
func TestCountLedgerProcesses(t *testing.T) {
	l := countLedger{bounds: userBounds, budget: map[string]int{rlimitNproc: 1000}, used: map[string]int{}}
	share := func(procs int) int {
		for _, c := range l.reserve(procs) {
			if c.Name == rlimitNproc {
				return c.Max
			}
		}
		t.Fatal("no share of RLIMIT_NPROC")
		return 0
	}
	var got []int
	for _, procs := range []int{272, 272, 272, 272, 272, 272, 272, 272, 8} {
		got = append(got, share(procs))
	}
	want := []int{272, 272, 228, 114, 57, 29, initThreads, initThreads, 8}
	if !slices.Equal(got, want) {
		t.Errorf("shares %v, want %v", got, want)
	}
}
