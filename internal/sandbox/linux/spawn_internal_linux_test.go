package linux

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"
)

// initState is what the host can see of a running init that does not
// depend on its pid: its id maps, setgroups, session, ignored signals,
// capabilities, namespaces (whether each is its own), cgroups and open
// descriptors.
func initState(t *testing.T, pid int) map[string]string {
	t.Helper()
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	st := map[string]string{}
	for _, f := range []string{"uid_map", "gid_map", "setgroups"} {
		st[f] = strings.Join(strings.Fields(read(f)), " ")
	}
	stat := read("stat")
	fields := strings.Fields(stat[strings.LastIndexByte(stat, ')')+2:])
	st["session leader"] = strconv.FormatBool(fields[3] == strconv.Itoa(pid))
	st["process group leader"] = strconv.FormatBool(fields[2] == strconv.Itoa(pid))
	for _, line := range strings.Split(read("status"), "\n") {
		k, v, _ := strings.Cut(line, ":")
		switch k {
		case "SigIgn", "CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs", "Seccomp", "Uid", "Gid", "Groups":
			st[k] = strings.Join(strings.Fields(v), " ")
		case "NSpid":
			f := strings.Fields(v)
			st["pid inside"] = f[len(f)-1]
		}
	}
	for _, ns := range []string{"user", "mnt", "pid", "net", "ipc", "uts", "cgroup"} {
		mine, err1 := os.Readlink("/proc/self/ns/" + ns)
		its, err2 := os.Readlink(filepath.Join(dir, "ns", ns))
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		st["own "+ns+" namespace"] = strconv.FormatBool(mine != its)
	}
	st["cgroup"] = read("cgroup")
	ents, err := os.ReadDir(filepath.Join(dir, "fd"))
	if err != nil {
		t.Fatal(err)
	}
	var fds []string
	for _, e := range ents {
		fds = append(fds, e.Name())
	}
	slices.Sort(fds)
	st["fds"] = strings.Join(fds, " ")
	return st
}

// TestSpawnedInitAsForked: an init started by spawnInit (no fork of the
// broker) is, seen from the host, the init os.StartProcess would have
// forked: the same id maps and setgroups, its own session, the same
// ignored signals and capabilities (but for the inheritable set the spawn
// carried them through the exec in), its own namespaces and the same
// descriptors.
func TestSpawnedInitAsForked(t *testing.T) {
	state := func(fork bool) map[string]string {
		forkInit = fork
		defer func() { forkInit = false }()
		b := joinBackend(t)
		x := stagedBox(t, b)
		if x.c.spawned == fork {
			t.Fatalf("forkInit %v: the init was spawned: %v", fork, x.c.spawned)
		}
		st := initState(t, x.c.proc.Pid)
		// The cgroup names differ by sandbox.
		st["cgroup"] = strings.ReplaceAll(st["cgroup"], x.cg.name(), "SANDBOX")
		return st
	}
	if !spawnBuilt {
		t.Skip("spawnInit is built with cgo on amd64 only")
	}
	forked := state(true)
	spawned := state(false)
	// The spawn carried the capabilities through the exec in the
	// inheritable and ambient sets (airlock_lockdown); the constructor
	// emptied the ambient one, and the init clears the inheritable one
	// with the rest at its lockdown.
	if spawned["CapInh"] != spawned["CapPrm"] {
		t.Errorf("the spawned init's inheritable set is %s, want its permitted %s", spawned["CapInh"], spawned["CapPrm"])
	}
	spawned["CapInh"] = forked["CapInh"]
	if diff := cmp.Diff(forked, spawned); diff != "" {
		t.Errorf("a spawned init differs from a forked one (-forked +spawned):\n%s", diff)
	}
	for k, want := range map[string]string{"setgroups": "deny", "session leader": "true", "pid inside": "1", "own user namespace": "true", "own net namespace": "true"} {
		if spawned[k] != want {
			t.Errorf("%s: %q, want %q", k, spawned[k], want)
		}
	}
	if want := "0 " + strconv.Itoa(os.Getuid()) + " 1"; spawned["uid_map"] != want {
		t.Errorf("uid_map %q, want %q", spawned["uid_map"], want)
	}
}

// TestSpawnedProcessAsForked: what spawnInit starts begins as what
// os.StartProcess forks with the init's attributes (initAttr): the same
// view of itself from inside, signal mask and dispositions included,
// with and without a terminal, except that it holds only its own files
// where a fork passes on any descriptor without close-on-exec. (The init blocks signals of its own once
// running, so TestSpawnedInitAsForked leaves the mask out.)
func TestSpawnedProcessAsForked(t *testing.T) {
	if !spawnBuilt {
		t.Skip("spawnInit is built with cgo on amd64 only")
	}
	if _, err := New(&Options{Executable: os.Args[0], Cgroups: CgroupsOptional}); err != nil {
		t.Skipf("no sandbox here: %v", err)
	}
	// /proc is the host's here: the shell compares its host pid with its
	// session's and group's, and $$ is its pid in its own namespace.
	script := `grep -E '^(Sig(Blk|Ign|Cgt)|Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Uid|Gid|Groups):' /proc/self/status
cat /proc/self/uid_map /proc/self/gid_map /proc/self/setgroups
read -r pid _ _ _ pgrp sid _ < /proc/self/stat
[ "$pid" = "$sid" ] && echo "session leader"; [ "$pid" = "$pgrp" ] && echo "group leader"; echo "pid $$"
echo "fds $(ls /proc/self/fd | tr '\n' ' ')"; tty; echo "$0 $1 [$X]"`
	run := func(fork, tty bool) string {
		return start(t, fork, tty, "/bin/sh", []string{"sh", "-c", script, "zero", "one"})
	}
	// cat shows the mask it was started with (a shell clears its mask
	// first thing). A forked child keeps its starting thread's; a spawned
	// one starts with none blocked, whatever that thread blocks.
	if st := start(t, false, false, "/bin/cat", []string{"cat", "/proc/self/status"}); !strings.Contains(st, "SigBlk:\t0000000000000000") {
		t.Errorf("spawned with signals blocked:\n%s", st)
	}
	// A descriptor without close-on-exec, as a program embedding airlock
	// might hold: a fork passes it on, a spawn does not.
	leak, err := unix.Open(os.DevNull, unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(leak)
	fdLine := regexp.MustCompile(`(?m)^fds .*$`)
	for _, tty := range []bool{false, true} {
		forked, spawned := run(true, tty), run(false, tty)
		// The spawned child holds its three files and the directory ls
		// reads, nothing else; the forked one at least those.
		if got := fdLine.FindString(spawned); got != "fds 0 1 2 3 " {
			t.Errorf("tty %v: a spawned process holds %q, want its files and ls's directory only", tty, got)
		}
		if !strings.Contains(fdLine.FindString(forked), " "+strconv.Itoa(leak)+" ") {
			t.Errorf("tty %v: the forked process does not hold fd %d (%q): the test cannot tell", tty, leak, fdLine.FindString(forked))
		}
		// The spawn locks the child down before its exec (airlock_lockdown):
		// no bounding set, no_new_privs, and its capabilities carried
		// through the exec as ambient ones, where a fork's child has
		// them as root. The rest is the same.
		capLine := func(s, name string) string {
			return regexp.MustCompile(`(?m)^` + name + `:\s*(\S+)$`).FindStringSubmatch(s + "\n")[1]
		}
		if got := capLine(spawned, "CapBnd"); got != "0000000000000000" {
			t.Errorf("tty %v: the spawned process's bounding set is %s, want empty", tty, got)
		}
		if got := capLine(spawned, "NoNewPrivs"); got != "1" {
			t.Errorf("tty %v: the spawned process's no_new_privs is %s, want 1", tty, got)
		}
		if prm, amb := capLine(spawned, "CapPrm"), capLine(spawned, "CapAmb"); amb != prm || prm != capLine(forked, "CapPrm") {
			t.Errorf("tty %v: the spawned process has permitted %s and ambient %s, want the forked one's permitted %s as both", tty, prm, amb, capLine(forked, "CapPrm"))
		}
		lockdown := regexp.MustCompile(`(?m)^(CapInh|CapBnd|CapAmb|NoNewPrivs):.*\n`)
		forked, spawned = lockdown.ReplaceAllString(forked, ""), lockdown.ReplaceAllString(spawned, "")
		forked, spawned = fdLine.ReplaceAllString(forked, "fds"), fdLine.ReplaceAllString(spawned, "fds")
		if diff := cmp.Diff(forked, spawned); diff != "" {
			t.Errorf("tty %v: a spawned process differs from a forked one (-forked +spawned):\n%s", tty, diff)
		}
		for _, want := range []string{"SigBlk:\t0000000000000000", "deny", "session leader", "pid 1\n", "zero one [x y]"} {
			if !strings.Contains(spawned, want) {
				t.Errorf("tty %v: %q in\n%s", tty, want, spawned)
			}
		}
	}
}

// start runs path with argv as the sandbox's init is started, forked or
// spawned, on a pipe or a terminal, with SIGWINCH blocked on the starting
// thread, and returns its output.
func start(t *testing.T, fork, tty bool, path string, argv []string) string {
	t.Helper()
	// The output comes back through a pipe, or the terminal's master.
	var in, out, read *os.File
	if tty {
		master, slave, err := openPTY(24, 80)
		if err != nil {
			t.Fatal(err)
		}
		in, out, read = slave, slave, master
	} else {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		devnull, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		in, out, read = devnull, w, r
	}
	defer read.Close()
	files := []*os.File{in, out, out}
	env := []string{"PATH=/usr/bin:/bin", "X=x y"}
	var p *os.Process
	var err error
	// With a signal blocked on the thread that starts it: the child
	// must not inherit the mask.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var winch, old unix.Sigset_t
	winch.Val[0] = 1 << (unix.SIGWINCH - 1)
	if err := unix.PthreadSigmask(unix.SIG_BLOCK, &winch, &old); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil) }()
	if fork {
		p, err = os.StartProcess(path, argv, &os.ProcAttr{Env: env, Files: files, Sys: initAttr(tty, -1)})
	} else {
		p, err = spawnInit(path, argv, env, files, tty, false, -1)
	}
	in.Close()
	out.Close()
	if err != nil {
		t.Fatalf("fork %v: %v", fork, err)
	}
	// Read to the end: EOF on the pipe, EIO on the master once the
	// child has exited and its terminal has no other holder.
	b, _ := io.ReadAll(io.LimitReader(read, 1<<16))
	if _, err := p.Wait(); err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(b), "\r", "")
}

// TestSpawnFailureReaped: a child that cannot exec reports which step
// failed and why, wrapping errSpawnUnsupported (so the backend forks
// instead and gets the error it always did), and is reaped: no zombie.
func TestSpawnFailureReaped(t *testing.T) {
	if !spawnBuilt {
		t.Skip("spawnInit is built with cgo on amd64 only")
	}
	if _, err := New(&Options{Executable: os.Args[0], Cgroups: CgroupsOptional}); err != nil {
		t.Skipf("no sandbox here: %v", err)
	}
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	missing := filepath.Join(t.TempDir(), "no-such-init")
	p, err := spawnInit(missing, []string{"x"}, nil, []*os.File{devnull, devnull, devnull}, false, false, -1)
	if p != nil || !errors.Is(err, errSpawnUnsupported) || !errors.Is(err, syscall.ENOENT) || !strings.Contains(err.Error(), "exec") {
		t.Fatalf("spawnInit of a missing binary: %v, %v; want an exec error wrapping ENOENT and errSpawnUnsupported", p, err)
	}
	// No child of this process is left a zombie (other tests reap theirs
	// before they end).
	procs, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range procs {
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+2:]))
		if len(f) > 1 && f[0] == "Z" && f[1] == strconv.Itoa(os.Getpid()) {
			t.Errorf("child %s of this process was left a zombie", e.Name())
		}
	}
}
