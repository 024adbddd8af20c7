package inside

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// Limits the init reports the container hit, one name a line on the
// report pipe when its payload has ended. They are wire.Limit names; the
// package imports nothing of the broker's.
const (
	ReportMemory    = "memory"
	ReportProcesses = "processes"
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

// report writes the limits the container hit to the broker's report
// pipe (when there is one) and closes it.
func report(f *os.File) {
	if f == nil {
		return
	}
	defer f.Close()
	if hit := hitLimits(); len(hit) > 0 {
		_, _ = f.WriteString(strings.Join(hit, "\n") + "\n")
	}
}
