package linux_test

import (
	"testing"
)

// TestToolModeCost: a tool-mode call, answered before its init is reaped,
// reports the CPU time of the init and what it reaped (read through the
// init's /proc/PID/stat, kept open since its start) and its cgroup's peak
// memory (through the descriptors the cgroup keeps open), cold and warm.
func TestToolModeCost(t *testing.T) {
	d := newDirs(t)
	spec := toolSpec(d)
	// About a second of a shell's CPU on any machine: far more than one
	// tick (10 ms) of /proc's clock.
	const burn = "sh:i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; echo burnt"
	check := func(name string, o out) {
		t.Helper()
		if o.stdout != "burnt\n" || o.res.ExitCode != 0 {
			t.Fatalf("%s: %q %q exit %d", name, o.stdout, o.stderr, o.res.ExitCode)
		}
		if o.res.CPU <= 0 {
			t.Errorf("%s: CPU %v, want the shell's", name, o.res.CPU)
		}
		if o.res.PeakMemory <= 0 && !acceptUnenforced {
			t.Errorf("%s: peak memory %d, want the cgroup's", name, o.res.PeakMemory)
		}
	}
	check("cold", callWith(t, backend(t), spec, burn))
	b := pooled(t, 1)
	if err := b.Prewarm(spec); err != nil {
		t.Fatal(err)
	}
	waitWarm(t, b, spec, 1)
	o := callWith(t, b, spec, burn)
	if !warm(o) {
		t.Fatalf("the call was not served warm: %v", o.res.Isolation.Features)
	}
	check("warm", o)
}
