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

// defunct reports whether pid has ended and waits to be reaped: a zombie
// (state Z, or X while it goes) with no thread left (a thread group whose
// leader thread exited alone shows Z while its other threads run).
func defunct(pid int) bool {
	f := StatFields(pid)
	if len(f) == 0 || f[0] != "Z" && f[0] != "X" {
		return false
	}
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil {
		return !exists(pid)
	}
	for _, t := range tasks {
		if s := taskState(pid, t.Name()); s != "" && s != "Z" && s != "X" {
			return false // a thread still runs
		}
	}
	return true
}

// taskState returns the state of thread tid of pid, or "".
func taskState(pid int, tid string) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + tid + "/stat")
	if err != nil {
		return ""
	}
	if f := ParseStat(b); len(f) > 0 {
		return f[0]
	}
	return ""
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
