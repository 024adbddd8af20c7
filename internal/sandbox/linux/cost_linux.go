package linux

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/airlockhq/airlock/internal/procid"
)

// userHZ is the unit of the times in /proc/PID/stat (USER_HZ, 100 on every
// architecture Linux builds for user space).
const userHZ = 100

// peakMemory returns the most memory the sandbox's cgroup held at once
// (v1 memory.max_usage_in_bytes, v2 memory.peak), or 0 where the kernel
// does not say.
func (cg *cgroup) peakMemory() int64 {
	if cg == nil || len(cg.dirs) == 0 {
		return 0
	}
	name := "memory.max_usage_in_bytes"
	if cg.host.version == 2 {
		name = "memory.peak"
	}
	b, err := cg.readCounter(filepath.Join(cg.dirs[0], name))
	if err != nil {
		return 0
	}
	n, _ := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	return n
}

// initCPU returns the CPU time (user and system) of the sandbox's init and
// every process it has reaped, from /proc/PID/stat: the init reaps the
// whole PID namespace, so once the tool has exited this is the sandbox's
// CPU time but for what is still dying.
// It reads through stat, the init's /proc/PID/stat kept open since its
// start (off a warm call's clock), when there is one. ok is false when the
// file could not be read: the init exited and was reaped already (its
// rusage then holds the same).
func initCPU(pid int, stat *os.File) (cpu time.Duration, ok bool) {
	var f []string
	if stat != nil {
		if b, err := readAllAt(int(stat.Fd()), stat.Name()); err == nil {
			f = procid.ParseStat(b)
		}
	} else {
		f = procid.StatFields(pid)
	}
	if len(f) < 15 {
		return 0, false
	}
	var ticks int64
	for _, k := range f[11:15] { // fields 14-17: utime, stime, cutime, cstime
		n, _ := strconv.ParseInt(k, 10, 64)
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, true
}

// rusageCPU returns the user and system time of a reaped init, its reaped
// descendants included.
func rusageCPU(ps *os.ProcessState) time.Duration {
	if ps == nil {
		return 0
	}
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
