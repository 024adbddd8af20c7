package linux_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/linux"
	"github.com/airlockhq/airlock/internal/testenv"
	"github.com/airlockhq/airlock/wire"
)

// sandboxOf returns the name of the sandbox cgroup of this test process
// ("airlock-<pid>-<n>") that path p is in, or "".
func sandboxOf(p string) string {
	prefix := "airlock-" + strconv.Itoa(os.Getpid()) + "-"
	parts := strings.Split(p, "/")
	for i, s := range parts {
		if strings.HasPrefix(s, prefix) && (i == len(parts)-1 || (i == len(parts)-2 && parts[i+1] == "payload")) {
			return s
		}
	}
	return ""
}

// uncontained lists, for every task (thread) of every process in the PID
// namespace whose inode is ns, the ones not in one sandbox cgroup of this
// process in both the memory and the pids hierarchy; and how many tasks it
// checked.
func uncontained(ns uint64) (bad []string, n int) {
	ents, _ := os.ReadDir("/proc")
	name := ""
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		var st syscall.Stat_t
		if syscall.Stat(filepath.Join("/proc", e.Name(), "ns", "pid"), &st) != nil || st.Ino != ns {
			continue
		}
		tasks, _ := os.ReadDir(filepath.Join("/proc", e.Name(), "task"))
		for _, task := range tasks {
			b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "task", task.Name(), "cgroup"))
			if err != nil {
				continue
			}
			comm, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "task", task.Name(), "comm"))
			n++
			for _, h := range []string{"memory", "pids"} {
				p := linux.CgroupOfTask(b, h)
				s := sandboxOf(p)
				if s == "" || (name != "" && s != name) {
					bad = append(bad, fmt.Sprintf("pid %s task %s (%s) in %s cgroup %q", e.Name(), task.Name(), strings.TrimSpace(string(comm)), h, p))
				}
				if name == "" {
					name = s
				}
			}
		}
	}
	return bad, n
}

// checkContained runs script (which must write its PID namespace's inode
// to the FIFO "$W/ns" and then read a line from "$W/go") through run, and
// while it waits checks every task of the sandbox from the host.
func checkContained(t *testing.T, d dirs, run func(script string) out, script string) {
	t.Helper()
	for _, f := range []string{"ns", "go"} {
		if err := syscall.Mkfifo(filepath.Join(d.W, f), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	type result struct {
		bad []string
		n   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		defer func() { done <- r }()
		b, err := os.ReadFile(filepath.Join(d.W, "ns"))
		defer func() {
			if f, err := os.OpenFile(filepath.Join(d.W, "go"), os.O_WRONLY, 0); err == nil {
				f.WriteString("go\n")
				f.Close()
			}
		}()
		if err != nil {
			r.err = err
			return
		}
		s := strings.TrimSpace(string(b))
		s = strings.TrimSuffix(strings.TrimPrefix(s, "pid:["), "]")
		ns, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			r.err = fmt.Errorf("the sandbox wrote %q: %w", b, err)
			return
		}
		r.bad, r.n = uncontained(ns)
	}()
	o := run(script)
	r := <-done
	if r.err != nil {
		t.Fatalf("%v (stdout %q stderr %q)", r.err, o.stdout, o.stderr)
	}
	// The command's three processes, and as root (which may look into the
	// init, not dumpable) the init's threads too.
	if want := 3 + boolInt(os.Geteuid() == 0)*2; r.n < want {
		t.Fatalf("checked %d tasks, want at least %d; stdout %q stderr %q", r.n, want, o.stdout, o.stderr)
	}
	for _, b := range r.bad {
		t.Error(b)
	}
	t.Logf("%d tasks checked; stdout %q stderr %q", r.n, o.stdout, o.stderr)
}

// The payload's script for checkContained: a background job, a
// grandchild in a process group of its own, then the handshake.
const containedScript = `sleep 300 & (setsid sleep 301 &) ; readlink /proc/self/ns/pid > "$PWD/ns"; read x < "$PWD/go"; kill $!`

// TestEveryTaskInItsCgroups: while a sandbox runs, every thread of every
// process in it (the init's Go threads, the command, its background jobs)
// is in the sandbox's memory and pids cgroups, cold, with a terminal, and
// warm.
func TestEveryTaskInItsCgroups(t *testing.T) {
	if !hasCgroups(backend(t)) {
		testenv.RequireFeature(t, "cgroups (memory and pids limits)")
	}
	inModes(t, func(t *testing.T, run func(spec *sandbox.Spec, script string) out) {
		d := newDirs(t)
		checkContained(t, d, func(script string) out {
			return run(&sandbox.Spec{Mounts: d.mounts(), Cwd: d.W}, script)
		}, containedScript)
	})
	t.Run("tty", func(t *testing.T) {
		d := newDirs(t)
		checkContained(t, d, func(script string) out {
			return run(t, &sandbox.Spec{TTY: true, Mounts: d.mounts(), Cwd: d.W, Command: []string{"/bin/sh", "-c", script}})
		}, containedScript)
	})
}

// TestBombsInModes: the process limit stops a fork bomb and the memory
// limit kills a memory bomb in a cold sandbox and in a warm one alike
// (the warm one's init joined its cgroups long before the call).
func TestBombsInModes(t *testing.T) {
	if !hasCgroups(backend(t)) {
		testenv.RequireFeature(t, "cgroups (memory and pids limits)")
	}
	needPython(t)
	inModes(t, func(t *testing.T, run func(spec *sandbox.Spec, script string) out) {
		d := newDirs(t)
		o := run(&sandbox.Spec{Mounts: d.mounts(), Cwd: d.W, Limits: sandbox.Limits{Pids: 32}},
			`n=0; while [ $n -lt 200 ]; do sleep 987613 & n=$((n+1)); echo $n > "$PWD/n"; done; echo forked $n`)
		b, _ := os.ReadFile(filepath.Join(d.W, "n"))
		if n, _ := strconv.Atoi(strings.TrimSpace(string(b))); n == 0 || n >= 32 || !slices.Contains(o.res.LimitsHit, wire.Limit("processes")) {
			t.Errorf("fork bomb: %d forks, LimitsHit %q, stdout %q stderr %q; want fewer than 32 and the process limit hit", n, o.res.LimitsHit, o.stdout, o.stderr)
		}
		o = run(&sandbox.Spec{Mounts: d.mounts(), Cwd: d.W, Limits: sandbox.Limits{MemoryBytes: 64 << 20}},
			`python3 -c 'b = bytearray(512 << 20); print("allocated")'`)
		if o.res.Limit != "memory" || strings.Contains(o.stdout, "allocated") {
			t.Errorf("memory bomb: Limit %q LimitsHit %q stdout %q stderr %q; want it killed at the memory limit", o.res.Limit, o.res.LimitsHit, o.stdout, o.stderr)
		}
	})
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
