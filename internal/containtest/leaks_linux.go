package containtest

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// hostState is what of the host a backend's sandboxes may change while
// they run and must give back when their sessions are closed: mounts of
// the suite's paths or of this process's staging directories, this
// process's cgroups and temporary directories, and its descriptors.
type hostState struct {
	mounts, cgroups, temps []string
	fds                    []string // "N -> target"
}

// snapshot reads the host's state as it concerns this run.
func (s *suite) snapshot() hostState {
	pid := "-" + strconv.Itoa(os.Getpid()) + "-"
	var st hostState
	if b, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) < 5 {
				continue
			}
			root, point := f[3], f[4]
			if strings.Contains(root, s.base) || strings.Contains(point, s.base) || strings.Contains(point, "airlock") && strings.Contains(point, pid) {
				st.mounts = append(st.mounts, root+" on "+point)
			}
		}
	}
	// Cgroups named for this process (the native backend's are
	// airlock-PID-START-N), at any depth a backend puts them.
	if ctrls, err := os.ReadDir("/sys/fs/cgroup"); err == nil {
		for _, c := range ctrls {
			root := filepath.Join("/sys/fs/cgroup", c.Name())
			walkDirs(root, 4, func(p string) {
				if strings.Contains(filepath.Base(p), pid) && strings.Contains(filepath.Base(p), "airlock") {
					st.cgroups = append(st.cgroups, p)
				}
			})
		}
	}
	walkDirs(os.TempDir(), 2, func(p string) {
		if strings.Contains(p, pid) && strings.Contains(p, "airlock") {
			st.temps = append(st.temps, p)
		}
	})
	if ents, err := os.ReadDir("/proc/self/fd"); err == nil {
		for _, e := range ents {
			l, err := os.Readlink("/proc/self/fd/" + e.Name())
			if err != nil {
				continue // the directory's own descriptor, closed since
			}
			st.fds = append(st.fds, e.Name()+" -> "+l)
		}
	}
	slices.Sort(st.mounts)
	slices.Sort(st.cgroups)
	slices.Sort(st.temps)
	return st
}

// walkDirs calls f for every directory below root, depth levels down at
// most, without following symlinks.
func walkDirs(root string, depth int, f func(string)) {
	if depth == 0 {
		return
	}
	ents, err := os.ReadDir(root)
	if err != nil {
		return
	}
	for _, e := range ents {
		if e.IsDir() {
			p := filepath.Join(root, e.Name())
			f(p)
			walkDirs(p, depth-1, f)
		}
	}
}

// extra returns what of now is not in before.
func extra(before, now []string) []string {
	var out []string
	for _, x := range now {
		if !slices.Contains(before, x) {
			out = append(out, x)
		}
	}
	return out
}

// checkGivenBack asserts that the host is back where it was before the
// suite's sessions opened (they are closed now): every mount, cgroup and
// temporary directory a call made is gone, and no descriptor is left
// open. A backend may tear down just after Close returns; it has a
// minute.
func (s *suite) checkGivenBack(before hostState) {
	t := s.t
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		now := s.snapshot()
		m, c, d := extra(before.mounts, now.mounts), extra(before.cgroups, now.cgroups), extra(before.temps, now.temps)
		// A descriptor number may be reused for something else: only more
		// descriptors than before count, named by what is new.
		var fds []string
		if len(now.fds) > len(before.fds) {
			fds = extra(before.fds, now.fds)
		}
		if len(m)+len(c)+len(d)+len(fds) == 0 {
			return
		}
		if time.Now().After(deadline) {
			if len(m) > 0 {
				t.Errorf("mounts left on the host after the sessions closed: %q", m)
			}
			if len(c) > 0 {
				t.Errorf("cgroups left after the sessions closed: %q", c)
			}
			if len(d) > 0 {
				t.Errorf("temporary directories left after the sessions closed: %q", d)
			}
			if len(fds) > 0 {
				t.Errorf("descriptors left open after the sessions closed: %q", fds)
			}
			return
		}
		time.Sleep(50 * time.Millisecond) //permit:time.Sleep (a named wait: for a backend's teardown after Close)
	}
}
