package procid

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

func pidSelf() int { return os.Getpid() }

func exists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}

// start returns pid's start time in clock ticks since boot (field 22 of
// /proc/PID/stat), or "".
func start(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command may hold spaces
	if i < 0 {
		return ""
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 20 {
		return ""
	}
	return f[19]
}
