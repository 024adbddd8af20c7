package linux

import (
	"debug/buildinfo"
	"fmt"
	"os"
	"strconv"
	"strings"

	llsys "github.com/landlock-lsm/go-landlock/landlock/syscall"
	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/internal/sandbox"
)

// Report probes the host once (cheaply) and returns the feature table.
func (b *Backend) Report() sandbox.Report {
	b.reportOnce.Do(func() { b.report = b.probe() })
	return b.report
}

func (b *Backend) probe() sandbox.Report {
	var fs []sandbox.Feature
	add := func(name string, ok, req bool, detail, fix string) {
		fs = append(fs, sandbox.Feature{Name: name, Available: ok, Required: req, Detail: detail, Fix: fix})
	}
	// User and other namespaces: a real clone of the init with no config
	// would be the truest probe; checking the namespace files and the
	// sysctls is enough and costs nothing.
	userns := true
	detail := "available"
	if _, err := os.Stat("/proc/self/ns/user"); err != nil {
		userns, detail = false, "kernel built without user namespaces"
	}
	fix := ""
	if v, err := os.ReadFile("/proc/sys/user/max_user_namespaces"); err == nil && strings.TrimSpace(string(v)) == "0" {
		userns, detail, fix = false, "user.max_user_namespaces is 0", "sysctl -w user.max_user_namespaces=15000"
	}
	if os.Geteuid() != 0 {
		if v, err := os.ReadFile("/proc/sys/kernel/unprivileged_userns_clone"); err == nil && strings.TrimSpace(string(v)) == "0" {
			userns, detail, fix = false, "kernel.unprivileged_userns_clone is 0", "sysctl -w kernel.unprivileged_userns_clone=1"
		}
		if v, err := os.ReadFile("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); err == nil && strings.TrimSpace(string(v)) == "1" {
			userns, detail, fix = false, "AppArmor restricts unprivileged user namespaces", "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0, or an AppArmor profile for airlock"
		}
	}
	add("user namespaces", userns, true, detail, fix)
	for _, ns := range []string{"mnt", "pid", "net", "ipc", "uts", "cgroup"} {
		_, err := os.Stat("/proc/self/ns/" + ns)
		f := ""
		if err != nil {
			f = nsFix
		}
		add(ns+" namespace", err == nil, true, errDetail(err), f)
	}
	if v, err := llsys.LandlockGetABIVersion(); err == nil && v > 0 {
		add("landlock", true, false, "ABI "+strconv.Itoa(v), "")
	} else {
		add("landlock", false, false, errDetail(err), "boot with lsm=...,landlock (Linux 5.13+)")
	}
	_, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0)
	add("seccomp", err == nil, true, errDetail(err), "a kernel with CONFIG_SECCOMP_FILTER")
	// The default grant has memory and process limits, and a Run that
	// cannot enforce them is refused: cgroups are required.
	switch b.cg.version {
	case 2:
		add("cgroup v2 memory+pids", true, true, b.cg.v2, "")
	case 1:
		add("cgroup v1 memory+pids", true, true, b.cg.mem+", "+b.cg.pids, "")
	default:
		add("cgroups", false, true, b.cg.reason, cgroupFix+"; "+optOut)
	}
	add("sealed binary", b.exe != nil, true, sealKind(b.exe), "")
	switch {
	case b.initFrom != "":
		add("separate init", true, false, b.initFrom+" (this build's; faster to start than this binary"+initCgoNote(b.initFrom)+")", "")
	case b.initWhy != nil:
		add("separate init", false, false, "sandboxes start this binary as their init: "+b.initWhy.Error(),
			"install airlock and "+InitCommand+" from one build side by side: go install ./cmd/airlock && CGO_ENABLED=0 go install ./cmd/airlock-init in a clean checkout (add -buildvcs=true where GOFLAGS says -buildvcs=false)")
	}
	fd, err := unix.Openat2(unix.AT_FDCWD, "/", &unix.OpenHow{Flags: unix.O_PATH | unix.O_CLOEXEC})
	if err == nil {
		unix.Close(fd)
	}
	add("openat2", err == nil, true, errDetail(err), "Linux 5.6+, or a container runtime with its own kernel that implements openat2 (gVisor's runsc of December 2022 does not)")
	fd, err = unix.OpenTree(unix.AT_FDCWD, "/", unix.OPEN_TREE_CLOEXEC)
	if err == nil {
		unix.Close(fd)
	}
	add("new mount API", err == nil, false, errDetail(err), "Linux 5.12+ (classic bind mounts are used otherwise)")
	fd, err = unix.PidfdOpen(os.Getpid(), 0)
	if err == nil {
		unix.Close(fd)
	}
	add("pidfd", err == nil, false, errDetail(err), "Linux 5.3+")
	return sandbox.Report{Backend: "linux", Features: fs, Limits: b.limitReport()}
}

// limitReport says which limits this broker enforces. Time, output, file
// size and /tmp need no privilege; memory and processes need a cgroup.
func (b *Backend) limitReport() []sandbox.LimitStatus {
	ls := []sandbox.LimitStatus{
		{Limit: sandbox.LimitTime, Enforced: true, Detail: "every process of the sandbox is killed at the deadline"},
		{Limit: sandbox.LimitOutput, Enforced: true, Detail: "a result keeps at most the cap (a command's output its start and end); a command that writes 8 times the cap is killed with its sandbox"},
		{Limit: sandbox.LimitFileSize, Enforced: true, Detail: "RLIMIT_FSIZE"},
		{Limit: sandbox.LimitTmp, Enforced: true, Detail: "size and inodes of the private /tmp (tmpfs)"},
		{Limit: sandbox.LimitDisk, Enforced: true, Detail: "a call that drives a file system it may write below its floor of free space (1%, 256 MiB to 4 GiB) or of free inodes (1%) is killed"},
	}
	var mem, pids sandbox.LimitStatus
	switch b.cg.version {
	case 2:
		mem = sandbox.LimitStatus{Enforced: true, Detail: "cgroup v2 memory.max under " + b.cg.v2}
		pids = sandbox.LimitStatus{Enforced: true, Detail: "cgroup v2 pids.max under " + b.cg.v2}
	case 1:
		mem = sandbox.LimitStatus{Enforced: true, Detail: "cgroup v1 memory.limit_in_bytes under " + b.cg.mem}
		pids = sandbox.LimitStatus{Enforced: true, Detail: "cgroup v1 pids.max under " + b.cg.pids}
	default:
		why := fmt.Sprintf(", and uid %d may manage none here (see cgroups); calls are refused unless they accept that", os.Getuid())
		mem = sandbox.LimitStatus{Detail: "needs a memory cgroup" + why, Fix: cgroupFix + "; " + optOut}
		pids = sandbox.LimitStatus{Detail: "needs a pids cgroup" + why, Fix: cgroupFix + "; " + optOut}
	}
	mem.Limit, pids.Limit = sandbox.LimitMemory, sandbox.LimitProcesses
	return append(ls, mem, pids)
}

// nsFix is how to provide a missing namespace: the kernel has them all
// since 4.6, so a missing one is a container runtime's.
const nsFix = "run airlock on Linux itself or under a container runtime that provides every namespace " +
	"(gVisor's runsc of December 2022, for one, shows only user, pid and net in /proc/self/ns)"

func errDetail(err error) string {
	if err == nil {
		return "available"
	}
	return fmt.Sprint(err)
}

// initCgoNote says, for the doctor, when the separate init at path was
// built with cgo where a build without would start faster: this binary's
// spawner locks each init down before its exec (spawnInit), which leaves
// a static init nothing to do before its main.
func initCgoNote(path string) string {
	bi, err := buildinfo.ReadFile(path)
	if err != nil || !spawnBuilt {
		return ""
	}
	for _, s := range bi.Settings {
		if s.Key == "CGO_ENABLED" && s.Value == "1" {
			return "; built with cgo: CGO_ENABLED=0 go install ./cmd/airlock-init starts each sandbox sooner"
		}
	}
	return ""
}
