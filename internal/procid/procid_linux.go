package procid

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

func pidSelf() int { return os.Getpid() }

// readSpace returns the boot id and the inode of this process's PID
// namespace, or "" when either cannot be read.
func readSpace() string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	ns, err := os.Readlink("/proc/self/ns/pid") // "pid:[4026531836]"
	if err != nil {
		return ""
	}
	ino := strings.TrimSuffix(strings.TrimPrefix(ns, "pid:["), "]")
	id := strings.ReplaceAll(strings.TrimSpace(string(boot)), "-", "")
	if id == "" || ino == "" || ino == ns {
		return ""
	}
	return id + "_" + ino
}

func exists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}

// start returns pid's start time in clock ticks since boot (field 22 of
// /proc/PID/stat), or "".
func start(pid int) string {
	f := StatFields(pid)
	if len(f) < 20 {
		return ""
	}
	return f[19]
}

// StatFields returns the fields of /proc/PID/stat that follow the command
// name: f[0] is field 3 (the state), so field N of proc(5) is f[N-3]. It
// returns nil when there is no such process.
func StatFields(pid int) []string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil
	}
	return ParseStat(b)
}

// ParseStat returns the fields of b, the contents of a /proc/PID/stat,
// that follow the command name, as StatFields does; nil when b is not one.
func ParseStat(b []byte) []string {
	s := string(b)
	i := strings.LastIndexByte(s, ')') // the command may hold spaces
	if i < 0 {
		return nil
	}
	return strings.Fields(s[i+1:])
}
