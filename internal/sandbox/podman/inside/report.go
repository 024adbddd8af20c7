package inside

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Limits the init reports the container hit, one name a line on the
// report pipe when its payload has ended. They are wire.Limit names; the
// package imports nothing of the broker's.
const (
	ReportMemory    = "memory"
	ReportProcesses = "processes"
	// ReportTime and ReportDisk are the limits the init enforces itself
	// (its deadline, its disk guard), reported before it exits to end
	// the container, so that the call is classified by its limit even
	// when the broker, stopped by job control, enforced neither.
	ReportTime = "time"
	ReportDisk = "disk"
)

// counters are the files of the container's own cgroup (a private
// cgroup namespace: its root is the container's) that count limit hits,
// for cgroup v2 and v1, with the key of the count.
var counters = []struct {
	limit, file, key string
}{
	{ReportMemory, "/sys/fs/cgroup/memory.events", "oom_kill"},
	{ReportMemory, "/sys/fs/cgroup/memory/memory.oom_control", "oom_kill"},
	{ReportProcesses, "/sys/fs/cgroup/pids.events", "max"},
	{ReportProcesses, "/sys/fs/cgroup/pids/pids.events", "max"},
}

// hitLimits lists the limits whose count in the container's cgroup is
// above zero: an OOM kill, a fork refused at pids.max.
func hitLimits() []string {
	var out []string
	for _, c := range counters {
		if len(out) > 0 && out[len(out)-1] == c.limit {
			continue
		}
		if count(c.file, c.key) > 0 {
			out = append(out, c.limit)
		}
	}
	return out
}

// count reads the value of key in a "key value" file; 0 when absent.
func count(file, key string) int64 {
	f, err := os.Open(file)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), " "); ok && k == key {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}

// reported makes the report once: the payload's end and the init's own
// end for a limit (end) may race.
var reported sync.Once

// report writes the limits the container hit, extra and those its cgroup
// counts, to the broker's report pipe (when there is one) and closes it.
// Only the first call writes.
func report(f *os.File, extra ...string) {
	reported.Do(func() {
		if f == nil {
			return
		}
		defer f.Close()
		if hit := append(extra, hitLimits()...); len(hit) > 0 {
			_, _ = f.WriteString(strings.Join(hit, "\n") + "\n")
		}
	})
}

// exitLimit is the init's status when it ended the container for a
// limit it enforces itself: 128+SIGKILL, as a container the broker
// killed.
const exitLimit = 128 + int(syscall.SIGKILL)

// end ends the container for limit: it reports it and exits, and the
// kernel kills every other process of the container's PID namespace
// with PID 1. A report pipe nobody reads (the broker stopped) holds the
// few bytes written without blocking.
func end(f *os.File, limit string) {
	report(f, limit)
	os.Exit(exitLimit)
}
