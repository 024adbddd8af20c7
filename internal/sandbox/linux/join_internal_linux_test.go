package linux

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/sandbox"
)

// joinBackend is a backend with cgroup v1 whose init joins its cgroups
// itself, or the test is skipped.
func joinBackend(t *testing.T) *Backend {
	t.Helper()
	b, err := New(&Options{Executable: os.Args[0], Cgroups: CgroupsOptional})
	if err != nil {
		t.Skipf("no sandbox here: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	if b.cg.version != 1 {
		t.Skipf("the init joins its cgroups itself on cgroup v1 only (here: version %d)", b.cg.version)
	}
	return b
}

// stagedBox builds a warm sandbox for a directory and returns it waiting
// for its claim, with its init running; the sandbox is torn down at the
// test's end.
func stagedBox(t *testing.T, b *Backend) *box {
	t.Helper()
	dir := t.TempDir()
	spec := &sandbox.Spec{Mounts: []sandbox.Mount{{Source: dir, Writable: true}}, Cwd: dir, Env: []string{"PATH=/usr/bin:/bin"}}
	l := withDefaults(spec.Limits)
	cfg, err := config(spec, l)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	x, _, err := b.build(context.Background(), &sandbox.Spec{}, cfg, l, start.Add(time.Minute), start, true)
	if err != nil || x == nil {
		t.Fatalf("building a warm sandbox: %v", err)
	}
	t.Cleanup(func() {
		x.kill("test")
		_, _ = x.c.proc.Wait()
		for {
			if _, ok := x.next(); !ok {
				break
			}
		}
		if err := b.teardown(x); err != nil {
			t.Errorf("teardown: %v", err)
		}
	})
	return x
}

// TestInitJoinsItsCgroups: on cgroup v1 the host writes no pid into the
// sandbox's cgroup.procs (each such write waits for an RCU grace period
// under cgroup_mutex); the init joins its memory and pids cgroups itself
// before the Go runtime starts. Every one of the init's threads, made by
// the runtime afterwards, is in both, as the limits need.
func TestInitJoinsItsCgroups(t *testing.T) {
	b := joinBackend(t)
	x := stagedBox(t, b)
	if x.cfg.Join == "" || x.cfg.Join != x.cg.name() {
		t.Fatalf("the config asks the init to join %q, want the sandbox's cgroup %q", x.cfg.Join, x.cg.name())
	}
	tasks, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(x.c.proc.Pid), "task"))
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) < 2 {
		t.Fatalf("the init has %d threads; the check needs the runtime's", len(tasks))
	}
	for _, task := range tasks {
		cg, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(x.c.proc.Pid), "task", task.Name(), "cgroup"))
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range []string{"memory", "pids"} {
			if !strings.HasSuffix(CgroupOfTask(cg, h), "/"+x.cg.name()) {
				t.Errorf("thread %s of the init is not in the sandbox's %s cgroup:\n%s", task.Name(), h, cg)
			}
		}
	}
	// And the host's own files say the same: the init is listed in both
	// hierarchies' cgroup.procs.
	for _, d := range x.cg.dirs {
		procs, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains("\n"+string(procs), "\n"+strconv.Itoa(x.c.proc.Pid)+"\n") {
			t.Errorf("%s/cgroup.procs lists %q, not the init %d", d, procs, x.c.proc.Pid)
		}
	}
}

// TestInitRefusesAnotherCgroup: an init asked to join its cgroups that
// finds itself anywhere else refuses to go on, and says so: the limits
// would not hold. (A spawned one joins them before its exec, in a cgroup
// namespace rooted there that shows no name: the host checks it then.) Here the config names a cgroup other than the one whose
// files the host passed.
func TestInitRefusesAnotherCgroup(t *testing.T) {
	b := joinBackend(t)
	dir := t.TempDir()
	spec := &sandbox.Spec{Mounts: []sandbox.Mount{{Source: dir, Writable: true}}, Cwd: dir, Env: []string{"PATH=/usr/bin:/bin"}}
	l := withDefaults(spec.Limits)
	cfg, err := config(spec, l)
	if err != nil {
		t.Fatal(err)
	}
	cg, err := b.cg.create("airlock-jointest-"+strconv.Itoa(os.Getpid()), l.mem, l.pids, initThreads)
	if err != nil {
		t.Fatal(err)
	}
	cfg.PayloadPids = l.pids
	cfg.Join = "airlock-not-this-one"
	x := &box{cfg: cfg, cg: cg}
	start := time.Now()
	res, err := b.setup(context.Background(), x, start.Add(time.Minute), start, false, nil)
	if x.c != nil {
		if terr := b.teardown(x); terr != nil {
			t.Errorf("teardown: %v", terr)
		}
	} else if derr := cg.destroy(); derr != nil {
		t.Errorf("removing the cgroup: %v", derr)
	}
	if res != nil || err == nil || !strings.Contains(err.Error(), "not in the sandbox's cgroup airlock-not-this-one of the memory and pids hierarchy") {
		t.Fatalf("setup with the wrong cgroup named: res %+v, err %v", res, err)
	}
	// Nothing is left: the init was reaped by setup, its cgroups removed.
	if x.c == nil || x.c.proc.Signal(syscall.Signal(0)) == nil {
		t.Errorf("the init that refused was not started or is still there (%+v)", x.c)
	}
	for _, d := range cg.dirs {
		if _, err := os.Stat(d); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s is left after the refusal: %v", d, err)
		}
	}
}

// TestHostRefusesUnconfirmedJoin: an init that ignores the join the host
// asked for (an airlock binary older than the host's, run through
// Options.Executable) would run outside the sandbox's memory limit, since
// the host no longer places it; the host kills it at its first status,
// which does not confirm the join, and says why. The init here is a shell
// script that reads its config and reports ready, as an old init would.
func TestHostRefusesUnconfirmedJoin(t *testing.T) {
	joinBackend(t) // skips where the init would not be asked to join
	fake := filepath.Join(t.TempDir(), "old-init")
	script := "#!/bin/sh\ncat <&3 >/dev/null\nprintf '{\"ready\":true}\\n' >&4\nexec sleep 10\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := New(&Options{Executable: fake, Cgroups: CgroupsOptional})
	if err != nil {
		t.Skipf("no backend with a script as its init: %v", err)
	}
	defer b.Close()
	dir := t.TempDir()
	res, err := b.Run(context.Background(), &sandbox.Spec{Mounts: []sandbox.Mount{{Source: dir, Writable: true}}, Cwd: dir,
		Env: []string{"PATH=/usr/bin:/bin"}, Command: []string{"/bin/true"}})
	if err == nil || !strings.Contains(err.Error(), "did not confirm it joined its cgroup") {
		t.Fatalf("Run with an init that ignores the join: res %+v, err %v", res, err)
	}
	// Nothing is left: no cgroup of this backend in either hierarchy.
	for _, p := range b.cg.parents() {
		left, _ := filepath.Glob(filepath.Join(p, "airlock-"+strconv.Itoa(os.Getpid())+"-*"))
		if len(left) > 0 {
			t.Errorf("cgroups left after the refusal: %v", left)
		}
	}
}

// TestInitClonedIntoV2Cgroup: on cgroup v2 the init is cloned straight
// into its cgroup (CLONE_INTO_CGROUP): no pid is written into
// cgroup.procs, whose move waits for an RCU grace period as on v1. This
// host's v2 hierarchy has no memory or pids controller, so the test gives
// the backend a v2 cgroup there by hand and drives its setup: the running
// init is in that cgroup, and the backend says it was placed at the clone.
func TestInitClonedIntoV2Cgroup(t *testing.T) {
	root := v2Root(t)
	logs := &SyncBuffer{}
	b, err := New(&Options{Executable: os.Args[0], Cgroups: CgroupsOptional,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Skipf("no sandbox here: %v", err)
	}
	defer b.Close()
	dir := filepath.Join(root, "airlock-intotest-"+strconv.Itoa(os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := os.Remove(dir); err != nil {
			t.Errorf("removing the test cgroup: %v", err)
		}
	}()
	work := t.TempDir()
	spec := &sandbox.Spec{Mounts: []sandbox.Mount{{Source: work, Writable: true}}, Cwd: work, Env: []string{"PATH=/usr/bin:/bin"},
		Command: []string{"/bin/sleep", "60"}}
	l := withDefaults(spec.Limits)
	cfg, err := config(spec, l)
	if err != nil {
		t.Fatal(err)
	}
	x := &box{cfg: cfg, cg: &cgroup{host: cgroupHost{version: 2, v2: root}, dirs: []string{dir}}}
	start := time.Now()
	res, err := b.setup(context.Background(), x, start.Add(time.Minute), start, false, nil)
	if err != nil || res != nil {
		t.Fatalf("setup: res %+v, err %v", res, err)
	}
	defer func() {
		x.kill("test")
		_, _ = x.c.proc.Wait()
		for {
			if _, ok := x.next(); !ok {
				break
			}
		}
		x.c.closeHost()
	}()
	cg, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(x.c.proc.Pid), "cgroup"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "0::/" + filepath.Base(dir) + "\n"; !strings.Contains(string(cg), want) {
		t.Errorf("the init's cgroups:\n%s\nwant the line %q", cg, want)
	}
	if !strings.Contains(logs.String(), "cgroup_placed=clone") {
		t.Errorf("the backend did not place the init at the clone; its log:\n%s", logs.String())
	}
	// Cloned into its cgroup without a fork of the broker, where built.
	if spawnBuilt && !strings.Contains(logs.String(), "spawned=true") {
		t.Errorf("the init was not spawned (clone3 with CLONE_INTO_CGROUP); the log:\n%s", logs.String())
	}
}
