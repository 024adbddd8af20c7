package linux_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/testenv"
	"github.com/airlockhq/airlock/wire"
)

// Case 11: a fork bomb hits pids.max and ends by the deadline; a
// concurrent sandbox still works and nothing is left afterwards. The time
// limit ended it, and both limits are named.
func TestHostile11ForkBomb(t *testing.T) {
	b := backend(t)
	if !hasCgroups(b) {
		testenv.RequireFeature(t, "cgroups (pids.max)")
	}
	var wg sync.WaitGroup
	var bomb out
	wg.Add(1)
	go func() {
		defer wg.Done()
		bomb = run(t, &sandbox.Spec{
			Limits:  sandbox.Limits{Pids: 64, Wall: 4 * time.Second},
			Command: []string{"/bin/bash", "-c", "f(){ f|f& };f; sleep 987611"},
		})
	}()
	time.Sleep(500 * time.Millisecond)
	o := sh(t, "echo alive")
	if o.stdout != "alive\n" {
		t.Errorf("concurrent sandbox: %+v", o)
	}
	wg.Wait()
	if bomb.res.Duration > 7*time.Second {
		t.Errorf("fork bomb ran %v, past its 4s deadline", bomb.res.Duration)
	}
	if bomb.res.Limit != "time" || !slices.Equal(bomb.res.LimitsHit, []wire.Limit{"time", "processes"}) {
		t.Errorf("Limit = %q, LimitsHit = %q (exit %d, signal %d, after %v, stderr %q); want time, and [time processes]",
			bomb.res.Limit, bomb.res.LimitsHit, bomb.res.ExitCode, bomb.res.Signal, bomb.res.Duration, tail(bomb.stderr, 2000))
	}
	waitNoProcs(t, "987611")
}

// Case 12: a memory bomb is OOM-killed inside its cgroup and reported.
func TestHostile12MemoryBomb(t *testing.T) {
	b := backend(t)
	if !hasCgroups(b) {
		testenv.RequireFeature(t, "cgroups (memory)")
	}
	needPython(t)
	for name, cmd := range map[string]string{
		"heap": "python3 -c 'b=bytearray(512<<20); print(len(b))'",
		"shm":  "head -c 300M /dev/zero >/dev/shm/x; sleep 1",
	} {
		t.Run(name, func(t *testing.T) {
			o := run(t, &sandbox.Spec{
				Limits:  sandbox.Limits{MemoryBytes: 64 << 20, TmpBytes: 512 << 20},
				Command: []string{"/bin/sh", "-c", cmd},
			})
			if o.res.Limit != "memory" || !slices.Equal(o.res.LimitsHit, []wire.Limit{"memory"}) {
				t.Fatalf("Limit = %q, LimitsHit = %q (exit %d sig %d, stderr %q), want memory", o.res.Limit, o.res.LimitsHit, o.res.ExitCode, o.res.Signal, o.stderr)
			}
		})
	}
}

// A limit hit by a payload that goes on to finish is named in LimitsHit,
// though it did not end the run: forks refused at pids.max, a child killed
// at the memory limit. Every limit hit is named, and only those.
func TestLimitsHitThenFinished(t *testing.T) {
	b := backend(t)
	if !hasCgroups(b) {
		testenv.RequireFeature(t, "cgroups (memory.oom_control, pids.events)")
	}
	needPython(t)
	forks := `python3 -c '
import os, time
n = 0
try:
    while n < 500:
        if os.fork() == 0:
            time.sleep(60)
            os._exit(0)
        n += 1
except OSError:
    print("fork refused after", n)
'`
	for _, tc := range []struct {
		name, script string
		wall         time.Duration
		limit        wire.Limit
		hits         []wire.Limit
		exit         int
	}{
		{"forks refused, then finished", forks + "; echo finished", 30 * time.Second, "", []wire.Limit{"processes"}, 0},
		{"forks refused, then ran out of time", forks + "; sleep 987640", 2 * time.Second, "time", []wire.Limit{"time", "processes"}, -1},
		{"forks refused, then failed", forks + "; exit 3", 30 * time.Second, "processes", []wire.Limit{"processes"}, 3},
		{"child killed at the memory limit, then finished", "python3 -c 'b = bytearray(300 << 20)'; echo finished", 30 * time.Second, "", []wire.Limit{"memory"}, 0},
		{"nothing hit", "echo finished", 30 * time.Second, "", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := run(t, &sandbox.Spec{
				Limits:  sandbox.Limits{Pids: 32, MemoryBytes: 64 << 20, Wall: tc.wall},
				Command: []string{"/bin/sh", "-c", tc.script},
			})
			if o.res.Limit != tc.limit || !slices.Equal(o.res.LimitsHit, tc.hits) || o.res.ExitCode != tc.exit {
				t.Fatalf("Limit %q LimitsHit %q exit %d (stdout %q stderr %q); want %q %q exit %d",
					o.res.Limit, o.res.LimitsHit, o.res.ExitCode, o.stdout, o.stderr, tc.limit, tc.hits, tc.exit)
			}
			if tc.exit == 0 && !strings.Contains(o.stdout, "finished") {
				t.Errorf("stdout %q", o.stdout)
			}
		})
	}
	waitNoProcs(t, "987640")
}

// Case 13: disk and inode fills hit the tmpfs size, nr_inodes and
// RLIMIT_FSIZE, never the host disk.
func TestHostile13DiskAndInodeFill(t *testing.T) {
	d := newDirs(t)
	o := run(t, &sandbox.Spec{
		Mounts: d.mounts(),
		Limits: sandbox.Limits{TmpBytes: 2 << 20, FileBytes: 3 << 20},
		Command: []string{"/bin/sh", "-c", `
			dd if=/dev/zero of=/tmp/f bs=64k count=200 2>&1 | tail -1; rm -f /tmp/f
			i=0; while [ $i -lt 100000 ]; do true >/tmp/i$i || break; i=$((i+1)); done; echo inodes=$i
			head -c 4M /dev/zero >` + d.W + `/big; echo big=$?`},
	})
	if !strings.Contains(o.stdout+o.stderr, "No space left") {
		t.Errorf("no ENOSPC from /tmp: %q %q", o.stdout, o.stderr)
	}
	if strings.Contains(o.stdout, "inodes=100000") {
		t.Errorf("inode cap not enforced: %q", o.stdout)
	}
	if fi, err := os.Stat(filepath.Join(d.W, "big")); err != nil || fi.Size() > 3<<20 {
		t.Errorf("RLIMIT_FSIZE not enforced: %v %v (%q %q)", fi, err, o.stdout, o.stderr)
	}
}

// Case 14: processes escaping the process group die with the sandbox,
// also when the run times out.
func TestHostile14EscapeProcessGroup(t *testing.T) {
	for _, tc := range []struct {
		name, tail string
		wall       time.Duration
	}{{"exit", "exit 0", 10 * time.Second}, {"timeout", "sleep 987624", time.Second}} {
		t.Run(tc.name, func(t *testing.T) {
			o := run(t, &sandbox.Spec{
				Limits:  sandbox.Limits{Wall: tc.wall},
				Command: []string{"/bin/bash", "-c", "setsid sleep 987620 & (sleep 987621 &); nohup sleep 987622 >/dev/null 2>&1 & " + tc.tail},
			})
			if tc.name == "timeout" && o.res.Limit != "time" {
				t.Errorf("Limit = %q, want time", o.res.Limit)
			}
			waitNoProcs(t, "98762")
		})
	}
}

// Case 15: signals. Ignoring TERM and stopping oneself still end at the
// deadline; kill -9 -1 reaches only the sandbox.
func TestHostile15Signals(t *testing.T) {
	for _, tc := range []struct{ name, script string }{
		{"trap", "trap '' TERM INT HUP; while :; do :; done"},
		{"stop", "kill -STOP $$"},
		{"kill-all", "kill -9 -1; sleep 987630"},
		{"kill-init", "kill -9 1; kill -TERM 1; sleep 987631"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := run(t, &sandbox.Spec{Limits: sandbox.Limits{Wall: 1500 * time.Millisecond}, Command: []string{"/bin/bash", "-c", tc.script}})
			if o.res.Duration > 4*time.Second {
				t.Errorf("ran %v past a 1.5s deadline", o.res.Duration)
			}
			waitNoProcs(t, "98763")
		})
	}
	if os.Getpid() <= 0 {
		t.Fatal("unreachable")
	}
}

// Case 16: wall time, not CPU time, bounds both sleeping and spinning.
func TestHostile16WallTime(t *testing.T) {
	for _, script := range []string{"sleep 987640", "while :; do :; done"} {
		t.Run(script, func(t *testing.T) {
			start := time.Now()
			o := run(t, &sandbox.Spec{Limits: sandbox.Limits{Wall: time.Second}, Command: []string{"/bin/sh", "-c", script}})
			if o.res.Limit != "time" || o.res.Signal != 9 || o.res.ExitCode != -1 {
				t.Errorf("result %+v, want Limit time, SIGKILL", o.res)
			}
			if el := time.Since(start); el > 3*time.Second {
				t.Errorf("took %v", el)
			}
			waitNoProcs(t, "987640")
		})
	}
}

// Case 17: the cgroup filesystem is absent, so limits cannot be changed.
func TestHostile17CgroupEscape(t *testing.T) {
	o := sh(t, "(echo $$ >/sys/fs/cgroup/cgroup.procs) 2>&1; (echo max >/sys/fs/cgroup/pids.max) 2>&1; (mount -t cgroup2 none /tmp) 2>&1; cat /proc/self/cgroup; ls /sys 2>&1")
	if strings.Count(o.stdout, "No such file")+strings.Count(o.stdout, "nonexistent") < 3 || !strings.Contains(o.stdout, "mount") {
		t.Fatalf("cgroupfs reachable? %q", o.stdout)
	}
	if strings.Contains(o.stdout, "process_api") {
		t.Errorf("host cgroup path visible: %q", o.stdout)
	}
	// The cgroup namespace is rooted at the sandbox's own cgroups: no line
	// names the broker's cgroup or the sandbox's (airlock-<broker pid>-<n>).
	for _, line := range strings.Split(o.stdout, "\n") {
		f := strings.SplitN(line, ":", 3)
		if len(f) != 3 || f[0] == "" || strings.Trim(f[0], "0123456789") != "" {
			continue // not a line of /proc/self/cgroup
		}
		if f[2] != "/" && f[2] != "/payload" {
			t.Errorf("/proc/self/cgroup shows a path above the sandbox's cgroup: %q", line)
		}
	}
}

// Case 18: TIOCSTI and TIOCLINUX fail; the sandbox never gets the host tty.
func TestHostile18TerminalInjection(t *testing.T) {
	needPython(t)
	script := `import fcntl, termios, sys
for name, req in (("TIOCSTI", termios.TIOCSTI), ("TIOCLINUX", 0x541C)):
    try:
        fcntl.ioctl(0, req, b"x")
        print(name, "ok")
    except OSError as e:
        print(name, e.errno)
`
	for _, tty := range []bool{false, true} {
		o := run(t, &sandbox.Spec{TTY: tty, Command: []string{"python3", "-c", script}})
		if strings.Contains(o.stdout, " ok") {
			t.Fatalf("tty=%v: injection succeeded: %q", tty, o.stdout)
		}
		if !strings.Contains(o.stdout, "TIOCSTI 1") && !strings.Contains(o.stdout, "TIOCSTI 25") {
			t.Fatalf("tty=%v: TIOCSTI want EPERM/ENOTTY: %q", tty, o.stdout)
		}
	}
}

// Case 18's class, kernel surface: a sandbox with a terminal (TTY, as
// airlock exec gives one) may not change its line discipline (TIOCSETD).
// Each line discipline is a kernel driver of its own behind the terminal
// (n_hdlc, n_gsm, slip, ppp, ...), several with a history of privilege
// escalations (CVE-2017-2636, CVE-2023-6546), and asking for one that is
// not loaded makes the kernel load its module where dev.tty.ldisc_autoload
// allows it, as distributions ship it. No tool needs one.
func TestTerminalLineDiscipline(t *testing.T) {
	needPython(t)
	// N_NULL (27) is built into many kernels; the terminal is put back to
	// N_TTY before anything is printed, since N_NULL discards output.
	script := `import fcntl, struct, termios
res = []
for name, disc in (("N_NULL", 27), ("N_HDLC", 13)):
    try:
        fcntl.ioctl(0, termios.TIOCSETD, struct.pack("i", disc))
        res.append(name + " 0")
    except OSError as e:
        res.append(name + " " + str(e.errno))
    try:
        fcntl.ioctl(0, termios.TIOCSETD, struct.pack("i", 0))
    except OSError:
        pass
print(" ".join(res))
`
	o := run(t, &sandbox.Spec{TTY: true, Command: []string{"python3", "-c", script}})
	if got := strings.TrimSpace(o.stdout); got != "N_NULL 1 N_HDLC 1" {
		t.Fatalf("TIOCSETD on the sandbox's terminal: got %q (stderr %q), want EPERM (errno 1) for each", got, o.stderr)
	}
}

// Wall time: sleep 1000 with a 1 s limit ends with Limit "time" and no
// process left on the host.
func TestSleepTimeout(t *testing.T) {
	o := run(t, &sandbox.Spec{Limits: sandbox.Limits{Wall: time.Second}, Command: []string{"sleep", "987650"}})
	if o.res.Limit != "time" {
		t.Fatalf("Limit = %q", o.res.Limit)
	}
	waitNoProcs(t, "987650")
	if cg := sandboxCgroups(t); len(cg) != 0 {
		t.Fatalf("cgroups left: %v", cg)
	}
}

// Cancelling the context kills the sandbox and Run returns an error.
func TestCancel(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err := backend(t).Run(ctx, &sandbox.Spec{Command: []string{"sleep", "987660"}, Env: []string{"PATH=/usr/bin:/bin"},
		Limits: sandbox.Limits{AllowUnenforced: acceptUnenforced}})
	if err == nil {
		t.Fatal("cancelled Run returned no error")
	}
	waitNoProcs(t, "987660")
}

// Output beyond the cap is cut, reported, and ends the sandbox.
func TestOutputLimit(t *testing.T) {
	o := run(t, &sandbox.Spec{Limits: sandbox.Limits{OutputBytes: 1000}, Command: []string{"yes"}})
	if !o.res.OutputTruncated || o.res.Limit != "output" || len(o.stdout) != 1000 {
		t.Fatalf("truncated %v limit %q len %d", o.res.OutputTruncated, o.res.Limit, len(o.stdout))
	}
}

// tail is the last n bytes of s, for an error message.
func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// On cgroup v1 the process limit is the command's own: a command may hold
// exactly Limits.Pids processes (itself included), however many threads
// the init has, and holding them all leaves the init able to make threads
// (no thread of the init is in the command's cgroup). Each run ends with
// the command, reported by a live init.
func TestPayloadProcessLimitExact(t *testing.T) {
	b := backend(t)
	if !hasCgroups(b) {
		testenv.RequireFeature(t, "cgroups (pids.max)")
	}
	needPython(t)
	const forker = `
import os, time
n = 0
try:
    while n < 500:
        if os.fork() == 0:
            time.sleep(987670)
            os._exit(0)
        n += 1
except OSError:
    pass
print(n)
`
	// A command (exec) and a tool's command (the shell tool, which the
	// init runs in-process and which starts its /bin/sh through
	// tool.Env.Start) get the same exact limit.
	for _, mode := range []string{"command", "tool"} {
		for _, pids := range []int{1, 2, 5, 40} {
			t.Run(mode+"/"+strconv.Itoa(pids), func(t *testing.T) {
				spec := &sandbox.Spec{Limits: sandbox.Limits{Pids: pids}}
				if mode == "command" {
					spec.Command = []string{"python3", "-c", forker}
				} else {
					spec.Stdin = strings.NewReader("sh:exec python3 -c '" + forker + "'")
				}
				o := run(t, spec)
				if !slices.Contains(o.res.Isolation.Features, "cgroup-v1-pids") {
					t.Skip("cgroup v2: the init shares the command's process limit (docs/architecture.md, Limits)")
				}
				want := fmt.Sprintf("%d\n", pids-1)
				if o.stdout != want || o.res.ExitCode != 0 {
					t.Fatalf("forked %q (exit %d, stderr %q), want %q: the command's own limit is %d", o.stdout, o.res.ExitCode, tail(o.stderr, 2000), want, pids)
				}
				if pids > 1 && !slices.Equal(o.res.LimitsHit, []wire.Limit{"processes"}) {
					t.Errorf("LimitsHit %q, want [processes]", o.res.LimitsHit)
				}
			})
		}
	}
	waitNoProcs(t, "987670")
}

// Case 12's class, on cgroup v1: memory.kmem.tcp.limit_in_bytes, which the
// cgroup sets to the memory limit, does not bound a sandbox with many
// sockets, since the kernel charges each socket's first buffers past it
// (forced charges, counted in no failcnt) and v1 keeps that count apart
// from memory.limit_in_bytes, so no OOM kill follows: eight processes of
// a 128 MiB sandbox held 300 MB in loopback buffers, and more would take
// the machine's whole tcp_mem, past which every TCP socket on the host
// (its other network namespaces included) is refused memory. The sandbox
// is killed for its memory limit once its TCP buffers pass it by a
// quarter.
func TestTCPBuffersPastTheLimitKilled(t *testing.T) {
	b := backend(t)
	if !hasCgroups(b) {
		testenv.RequireFeature(t, "cgroups (memory)")
	}
	needPython(t)
	o := run(t, &sandbox.Spec{
		Command: []string{"python3", "-c", `
import os, socket, resource
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
def fill(port):
    l = socket.socket()
    l.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    l.bind(("127.0.0.1", port)); l.listen(4096)
    held, total, buf = [], 0, b"x" * 65536
    for _ in range((soft - 40) // 2):
        c = socket.create_connection(("127.0.0.1", port)); s, _ = l.accept()
        for k in (c, s):
            k.setblocking(False)
            try:
                while True:
                    total += k.send(buf)
            except OSError:
                pass
        held += [c, s]
    return total
r, w = os.pipe()
for i in range(8):
    if os.fork() == 0:
        os.write(w, b"%d\n" % fill(20000 + i))
        os.read(r, 1)  # hold the buffers until the sandbox ends
        os._exit(0)
f = os.fdopen(r)
print(sum(int(f.readline()) for _ in range(8)) >> 20, "MiB held", flush=True)
f.read()  # and hold them: only a kill ends this
`},
		Limits: sandbox.Limits{MemoryBytes: 128 << 20, Wall: 20 * time.Second},
	})
	if o.res.Limit != "memory" {
		t.Fatalf("Limit = %q (exit %d, signal %d, stdout %q, stderr %q); want the sandbox killed for its 128 MiB memory limit", o.res.Limit, o.res.ExitCode, o.res.Signal, o.stdout, o.stderr)
	}
}
