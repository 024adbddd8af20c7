package linux

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/airlockhq/airlock/internal/procid"
)

// TestCgroupOwner reads the broker out of the names sandbox cgroups have
// had, and nothing out of any other name.
func TestCgroupOwner(t *testing.T) {
	if n := cgroupName("123-456", "", 7); n != "airlock-123-456-7" {
		t.Fatalf("cgroupName: %q", n)
	}
	if n := cgroupName("123-456", "b00t_4026531836", 7); n != "airlock-123-456-7.b00t_4026531836" {
		t.Fatalf("cgroupName: %q", n)
	}
	for name, want := range map[string][2]string{
		"airlock-123-456-7":                 {"123-456", ""}, // pid and start time
		"airlock-123-7":                     {"123", ""},     // the older form: the pid alone
		"airlock-123-456-7.b00t_4026531836": {"123-456", "b00t_4026531836"},
	} {
		if id, space, ok := cgroupOwner(name); !ok || string(id) != want[0] || space != want[1] {
			t.Errorf("cgroupOwner(%q) = %q, %q, %v; want %q", name, id, space, ok, want)
		}
	}
	for _, name := range []string{"airlock-123-bench", "airlock-", "airlock-7", "airlock--7", "airlock-x-456-7", "airlock-123-x-7", "other-123-456-7", "airlock-0-7", "airlock-123-456-", "airlock-123-456-7.", "airlock-123-456.x-7"} {
		if id, _, ok := cgroupOwner(name); ok {
			t.Errorf("cgroupOwner(%q) = %q, want no owner", name, id)
		}
	}
}

// TestSweepReusedPid: a broker's start sweeps the cgroups a dead broker
// left even when the dead one had this broker's pid (pids wrap at 32768
// by default, and a CI run goes round them): its name carries another
// start time. With the pid alone in the name, the sweep took the dead
// broker for this live one and kept its cgroups, and this broker's first
// sandbox found its cgroup's name taken. This broker's own cgroups stay.
func TestSweepReusedPid(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to make cgroups by hand")
	}
	h := detectCgroups("")
	if h.version == 0 {
		t.Skip("no cgroups here")
	}
	self := procid.Self()
	dead := procid.ID(strconv.Itoa(os.Getpid()) + "-1") // this pid, started at tick 1: not this process
	if dead == self {
		t.Skip("this process started at tick 1")
	}
	var gone, kept []string
	for _, p := range h.parents() {
		g, k := filepath.Join(p, cgroupName(dead, procid.Space(), 1)), filepath.Join(p, cgroupName(self, procid.Space(), 1<<40))
		for _, d := range []string{g, k} {
			if err := os.Mkdir(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		gone, kept = append(gone, g), append(kept, k)
	}
	defer func() {
		for _, d := range append(gone, kept...) {
			_ = os.Remove(d)
		}
	}()
	h.sweep()
	for _, d := range gone {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("the dead broker's %s is left (%v)", d, err)
		}
	}
	for _, d := range kept {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("this broker's own %s was swept: %v", d, err)
		}
	}
}
