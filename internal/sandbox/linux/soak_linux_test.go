package linux_test

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/testenv"
	"github.com/airlockhq/airlock/wire"
)

// hostState is what must return to baseline after any number of runs.
type hostState struct {
	Procs, MountLines, FDs, Goroutines int // Procs: our descendants
	Cgroups, TmpEntries                []string
}

// ourTemp lists the temp directory; the soak points TMPDIR at a private
// directory, so anything there was left by the backend.
func ourTemp() []string {
	var out []string
	ents, _ := os.ReadDir(os.TempDir())
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func countDir(p string) int {
	ents, _ := os.ReadDir(p)
	return len(ents)
}

// hostMountLines counts the host's mounts, leaving out those of container
// engines (Podman's overlays, network namespaces, its run directories) and
// the small file systems tests mount (testenv.FSSource) that other tests on the
// machine may make at the same time: airlock's own
// backend never mounts in the host's namespace, so any other new line is
// its leak.
func hostMountLines() int {
	mi, _ := os.ReadFile("/proc/self/mountinfo")
	n := 0
	for _, line := range strings.Split(string(mi), "\n") {
		if line == "" || strings.Contains(line, "containers") || strings.Contains(line, testenv.FSSource) || strings.Contains(line, "/netns") ||
			strings.Contains(line, " - overlay ") || strings.Contains(line, " - nsfs ") || strings.Contains(line, "podman") {
			continue
		}
		n++
	}
	return n
}

func takeState(t testing.TB) hostState {
	t.Helper()
	procs := descendants(os.Getpid())
	return hostState{
		Procs: procs, MountLines: hostMountLines(), FDs: countDir("/proc/self/fd"),
		TmpEntries: ourTemp(), Goroutines: runtime.NumGoroutine(), Cgroups: sandboxCgroups(t),
	}
}

// settledState is takeState once the processes and goroutines a run
// leaves to finish (a teardown's goroutine returns just after the
// WaitGroup it signals lets Close return) are down to before's, or after
// a few seconds of waiting for that. Fewer goroutines than before count
// as before's number: other tests' may end meanwhile.
func settledState(t testing.TB, before hostState) hostState {
	t.Helper()
	var after hostState
	for deadline := time.Now().Add(3 * time.Second); ; {
		after = takeState(t)
		if after.Procs <= before.Procs && after.Goroutines <= before.Goroutines || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if after.Goroutines <= before.Goroutines {
		after.Goroutines = before.Goroutines
	}
	return after
}

// TestSoak runs mixed normal, timed-out, OOM and crashing sandboxes and
// checks that processes, mounts, fds, temp dirs, goroutines and cgroups
// return to baseline (hostile case 52).
func TestSoak(t *testing.T) {
	n := 1000
	if testing.Short() {
		n = 100
	}
	b := backend(t)
	cg := hasCgroups(b)
	t.Setenv("TMPDIR", t.TempDir())
	sh(t, "true") // warm up: the sealed copy and the runtime's own fds
	before := takeState(t)
	limits := map[wire.Limit]int{}
	for i := 0; i < n; i++ {
		spec := &sandbox.Spec{Env: []string{"PATH=/usr/bin:/bin"}}
		switch i % 8 {
		case 0:
			spec.Command = []string{"sleep", "987700"}
			spec.Limits.Wall = 100 * time.Millisecond
		case 1:
			if !cg {
				spec.Command = []string{"true"}
				break
			}
			spec.Command = []string{"/bin/sh", "-c", "head -c 64M /dev/zero >/dev/shm/x"}
			spec.Limits.MemoryBytes = 16 << 20
			spec.Limits.TmpBytes = 128 << 20
		case 2:
			spec.Command = []string{"/bin/sh", "-c", "kill -SEGV $$"}
		case 3:
			spec.Command = []string{"/bin/sh", "-c", "setsid sleep 987701 & echo out; exit 3"}
		default:
			spec.Command = []string{"true"}
		}
		o, err := tryRun(t, spec)
		if err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
		limits[o.res.Limit]++
	}
	waitNoProcs(t, "98770")
	after := settledState(t, before)
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("host state after %d runs (-before +after)\n%s", n, diff)
	}
	t.Logf("%d runs, limits %v", n, limits)
	if limits["time"] < n/8 {
		t.Errorf("time limits %d, want %d", limits["time"], n/8)
	}
	if cg && limits["memory"] < n/8 {
		t.Errorf("memory limits %d, want %d", limits["memory"], n/8)
	}
}

// descendants counts the processes below pid (the machine is shared, so
// the host-wide count is noise; a sandbox process that escaped our tree
// would still sit in our cgroups, which are checked too).
func descendants(pid int) int {
	children := map[int][]int{}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) > 1 {
			pp, _ := strconv.Atoi(f[1])
			children[pp] = append(children[pp], p)
		}
	}
	n := 0
	var walk func(int)
	walk = func(p int) {
		for _, c := range children[p] {
			n++
			walk(c)
		}
	}
	walk(pid)
	return n
}
