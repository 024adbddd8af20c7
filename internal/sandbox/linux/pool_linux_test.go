package linux_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/linux"
	"github.com/airlockhq/airlock/internal/testenv"
	"github.com/airlockhq/airlock/wire"
)

// pooled returns a fresh backend with a pool of size n, closed at the end.
func pooled(t testing.TB, n int) *linux.Backend {
	t.Helper()
	return pooledWith(t, n, "")
}

// pooledWith is pooled with the backend's state directory stateDir (its
// placeholder journal and depot; none when empty).
func pooledWith(t testing.TB, n int, stateDir string) *linux.Backend {
	t.Helper()
	backend(t) // skips where the host cannot sandbox
	logs := &linux.SyncBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("backend log:\n%s", logs.String())
		}
	})
	b, err := linux.New(&linux.Options{Executable: os.Args[0], Cgroups: linux.CgroupsOptional, PoolSize: n, StateDir: stateDir,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		var mf *sandbox.MissingFeatureError
		if errors.As(err, &mf) {
			testenv.RequireFeature(t, mf.Error())
		}
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { b.Close() })
	poolLogs.Store(b, logs)
	return b
}

// poolLogs holds the debug log of each backend pooled made.
var poolLogs sync.Map // *linux.Backend -> *linux.SyncBuffer

// toolSpec is a tool-mode spec over d's grants (the pool serves those).
func toolSpec(d dirs) *sandbox.Spec {
	return &sandbox.Spec{
		Mounts: d.mounts(), Env: []string{"PATH=/usr/bin:/bin", "HOME=/tmp"}, Cwd: d.W,
		Limits: sandbox.Limits{Wall: 30 * time.Second, AllowUnenforced: acceptUnenforced},
	}
}

// waitWarm waits until b has n warm sandboxes of spec's shape.
func waitWarm(t testing.TB, b *linux.Backend, spec *sandbox.Spec, n int) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for b.Warm(spec) < n {
		if time.Now().After(deadline) {
			t.Fatalf("pool has %d warm sandboxes after 20s, want %d", b.Warm(spec), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// warmPool returns a backend keeping a pool of n with n warm sandboxes of
// spec's shape ready.
func warmPool(t testing.TB, n int, spec *sandbox.Spec) *linux.Backend {
	t.Helper()
	b := pooled(t, n)
	if err := b.Prewarm(spec); err != nil {
		t.Fatal(err)
	}
	waitWarm(t, b, spec, n)
	return b
}

// callWith runs spec on b with input on stdin.
func callWith(t testing.TB, b *linux.Backend, spec *sandbox.Spec, input string) out {
	t.Helper()
	s := *spec
	var so, se bytes.Buffer
	s.Stdin, s.Stdout, s.Stderr = strings.NewReader(input), &so, &se
	res, err := b.Run(context.Background(), &s)
	if err != nil {
		t.Fatalf("Run(%q): %v", input, err)
	}
	return out{res: res, stdout: so.String(), stderr: se.String()}
}

func warm(o out) bool { return slices.Contains(o.res.Isolation.Features, "warm") }

// TestPoolSameAsCold checks that a warm sandbox answers as a cold one
// does, isolation included, and says it was warm.
func TestPoolSameAsCold(t *testing.T) {
	d := newDirs(t)
	t.Run("writable", func(t *testing.T) { samePoolAsCold(t, d, toolSpec(d)) })
	// A tool that changes nothing: its warm sandbox is locked down before
	// it waits, its isolation reported in two statuses.
	t.Run("read-only", func(t *testing.T) { samePoolAsCold(t, d, readOnlySpec(toolSpec(d))) })
}

// samePoolAsCold is TestPoolSameAsCold for spec.
func samePoolAsCold(t *testing.T, d dirs, spec *sandbox.Spec) {
	b := warmPool(t, 2, spec)
	for _, input := range []string{"hello", "sh:cat " + d.R + "/f; id -u; cat /proc/self/status | grep -E '^Cap(Eff|Bnd)'", "sh:cat " + d.O + "/canary"} {
		t.Run(input, func(t *testing.T) {
			waitWarm(t, b, spec, 1)
			w := callWith(t, b, spec, input)
			c := callWith(t, backend(t), spec, input)
			if !warm(w) || warm(c) {
				t.Fatalf("warm features %v, cold features %v", w.res.Isolation.Features, c.res.Isolation.Features)
			}
			if strings.Contains(input, d.O) {
				d.noCanary(t, w)
			}
			strip := func(o out) out {
				r := *o.res
				r.Isolation.Features = slices.DeleteFunc(slices.Clone(r.Isolation.Features), func(f string) bool { return f == "warm" })
				r.Setup, r.Duration, r.CPU, r.PeakMemory = 0, 0, 0, 0
				o.res = &r
				return o
			}
			// (Whether it came from the pool is its "warm" feature, above:
			// its setup time against the cold one's is no sign on a loaded
			// machine, where a claim can wait longer than a cold build.)
			if diff := cmp.Diff(strip(c), strip(w), cmp.AllowUnexported(out{})); diff != "" {
				t.Errorf("warm differs from cold (-cold +warm)\n%s", diff)
			}
		})
	}
}

// TestPoolUsedOnce checks that no two calls share a warm sandbox: a
// marker one call leaves in its /tmp is not there for the next.
func TestPoolUsedOnce(t *testing.T) {
	d := newDirs(t)
	spec := toolSpec(d)
	b := pooled(t, 2)
	if err := b.Prewarm(spec); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		waitWarm(t, b, spec, 2)
		o := callWith(t, b, spec, "sh:ls /tmp; echo $$ > /tmp/marker-"+strings.Repeat("x", i+1))
		if !warm(o) {
			t.Fatalf("call %d was not warm: %v", i, o.res.Isolation.Features)
		}
		if strings.Contains(o.stdout, "marker") {
			t.Fatalf("call %d saw an earlier call's /tmp: %q", i, o.stdout)
		}
	}
}

// TestPoolLimits checks that a warm sandbox still meets its limits and
// names them, and that time spent waiting in the pool is not counted.
func TestPoolLimits(t *testing.T) {
	d := newDirs(t)
	b := pooled(t, 1)
	cg := hasCgroups(b)
	tests := []struct {
		name, input string
		limits      sandbox.Limits
		wantLimit   wire.Limit
		wantOut     string
	}{
		{name: "time", input: "sh:sleep 987702", limits: sandbox.Limits{Wall: 300 * time.Millisecond}, wantLimit: "time"},
		{name: "idle time not counted", input: "sh:sleep 0.2; echo done", limits: sandbox.Limits{Wall: 1500 * time.Millisecond}, wantOut: "done\n"},
		// 48 MiB: an idle init built with -race needs more than 16.
		{name: "memory", input: "sh:head -c 160M /dev/zero >/dev/shm/x", limits: sandbox.Limits{Wall: 30 * time.Second, MemoryBytes: 48 << 20, TmpBytes: 256 << 20}, wantLimit: "memory"},
		{name: "output", input: "sh:head -c 1M /dev/zero", limits: sandbox.Limits{Wall: 30 * time.Second, OutputBytes: 1000}, wantLimit: "output"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.wantLimit == "memory" && !cg {
				testenv.RequireFeature(t, "cgroups (memory limit)")
			}
			spec := toolSpec(d)
			spec.Limits = tc.limits
			spec.Limits.AllowUnenforced = acceptUnenforced
			if err := b.Prewarm(spec); err != nil {
				t.Fatal(err)
			}
			waitWarm(t, b, spec, 1)
			time.Sleep(2 * time.Second) // longer than the wall time: must not count
			o := callWith(t, b, spec, tc.input)
			if !warm(o) {
				t.Fatalf("not warm: %v", o.res.Isolation.Features)
			}
			if o.res.Limit != tc.wantLimit || tc.wantOut != "" && o.stdout != tc.wantOut {
				t.Fatalf("limit %q stdout %q stderr %q, want limit %q stdout %q", o.res.Limit, o.stdout, o.stderr, tc.wantLimit, tc.wantOut)
			}
		})
	}
	waitNoProcs(t, "987702")
}

// TestPoolGrowsWhenOutrun checks that a shape whose call finds no warm
// sandbox ready keeps one more from then on, so back-to-back calls stop
// waiting for cold builds. (A call waits for a build under way only so
// long: here not at all, so that it runs cold.)
func TestPoolGrowsWhenOutrun(t *testing.T) {
	defer linux.SetMaxBuildWait(0)()
	d := newDirs(t)
	spec := toolSpec(d)
	b := pooled(t, 1)
	callWith(t, b, spec, "hello") // creates the shape; its first build starts now
	// The next call comes before that build can have finished.
	if o := callWith(t, b, spec, "hello"); warm(o) {
		t.Skip("the pool's first build finished between two back-to-back calls")
	}
	waitWarm(t, b, spec, 2)
	for range 3 {
		waitWarm(t, b, spec, 2)
		if o := callWith(t, b, spec, "hello"); !warm(o) {
			t.Fatalf("a call with two warm sandboxes ready ran cold: %v", o.res.Isolation.Features)
		}
	}
}

// TestPoolStaleGrantPaths checks that a warm sandbox built before a
// denied path existed is not used once it does: the call gets a sandbox
// that masks it, as a cold one would.
func TestPoolStaleGrantPaths(t *testing.T) {
	d := newDirs(t)
	spec := toolSpec(d)
	secret := filepath.Join(d.W, "secret.env")
	spec.Masks = []string{secret}
	// A pool that holds its two sandboxes, none being built: a fresh one
	// (no call yet has made it keep more), once both are ready. A
	// sandbox built after the change would match the tree again and may
	// serve the call, so none may be under way when the tree changes.
	ready := func() *linux.Backend { return warmPool(t, 2, spec) }
	b := ready()
	if err := os.WriteFile(secret, []byte(d.canary), 0o600); err != nil {
		t.Fatal(err)
	}
	o := callWith(t, b, spec, "sh:cat "+secret)
	d.noCanary(t, o)
	if warm(o) {
		t.Errorf("a warm sandbox built before %s existed was used", secret)
	}
	// Replacing the masked file (an editor's save) also makes them stale.
	b = ready()
	if err := os.WriteFile(secret+".new", []byte(d.canary+"2"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(secret+".new", secret); err != nil {
		t.Fatal(err)
	}
	o = callWith(t, b, spec, "sh:cat "+secret)
	d.noCanary(t, o)
	if warm(o) {
		t.Errorf("a warm sandbox built before %s was replaced was used", secret)
	}
	// A tree's protected names, most of them missing, are checked from a
	// listing of their directory: one made after the build is seen there.
	pd := newDirs(t)
	pspec := protectedSpec(t, pd)
	b = warmPool(t, 2, pspec)
	if o := callWith(t, b, pspec, "sh:true"); !warm(o) {
		t.Fatalf("an unchanged tree's call was not served warm: %v", o.res.Isolation.Features)
	}
	// That call's placeholders go with its sandbox's teardown, after Run
	// returns: a pool built over the same tree meanwhile sees them go
	// during its setup and builds again (twice at most). Closing waits for
	// the teardown.
	b.Close()
	b = warmPool(t, 2, pspec)
	rc := filepath.Join(pd.W, ".bashrc")
	if err := os.WriteFile(rc, []byte("echo hi\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if o := callWith(t, b, pspec, "sh:true"); warm(o) {
		t.Errorf("a warm sandbox built before %s existed was used", rc)
	}
}

// poolState is what a pool holds on the host.
type poolState struct {
	Procs        int
	Cgroups      []string
	Placeholders bool
}

func takePoolState(t testing.TB, placeholder string) poolState {
	_, err := os.Lstat(placeholder)
	var names []string // one per sandbox, v1 or v2
	for _, p := range sandboxCgroups(t) {
		if n := filepath.Base(p); !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	return poolState{Procs: descendants(os.Getpid()), Cgroups: names, Placeholders: err == nil}
}

// TestPoolDrain checks that warm sandboxes waiting in the pool hold no
// placeholder, that a grant change drains the old grant's warm sandboxes
// and that Close drains everything: no process, cgroup or placeholder is
// left.
func TestPoolDrain(t *testing.T) {
	d1, d2 := newDirs(t), newDirs(t)
	s1, s2 := toolSpec(d1), toolSpec(d2)
	ph := filepath.Join(d1.W, ".git", "hooks")
	s1.ReadOnly = []string{ph}
	b := pooled(t, 2)
	cg := hasCgroups(b)
	before := takePoolState(t, ph)
	if err := b.Prewarm(s1); err != nil {
		t.Fatal(err)
	}
	waitWarm(t, b, s1, 2)
	st := takePoolState(t, ph)
	if st.Procs < 2 || st.Placeholders || cg && len(st.Cgroups) != 2 {
		t.Fatalf("with two warm sandboxes: %+v, want two processes, two cgroups and no placeholder", st)
	}
	if err := b.Prewarm(s2); err != nil {
		t.Fatal(err)
	}
	waitWarm(t, b, s2, 2)
	if n := b.Warm(s1); n != 0 {
		t.Errorf("%d warm sandboxes of the old grant left", n)
	}
	st = takePoolState(t, ph)
	if st.Placeholders || cg && len(st.Cgroups) != 2 {
		t.Errorf("after a grant change: %+v, want the new grant's two cgroups and no placeholder", st)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if after := takePoolState(t, ph); !cmp.Equal(before, after) {
		t.Errorf("after Close (-before +after)\n%s", cmp.Diff(before, after))
	}
	// Runs after Close are cold.
	if o := callWith(t, b, s2, "hello"); warm(o) || o.stdout != "pong: hello" {
		t.Errorf("after Close: warm %v stdout %q", warm(o), o.stdout)
	}
}

// TestPoolHolders checks that the pool lives while any holder holds it.
func TestPoolHolders(t *testing.T) {
	d := newDirs(t)
	spec := toolSpec(d)
	b := pooled(t, 0)
	if err := b.Prewarm(spec); err != nil || b.Warm(spec) != 0 {
		t.Fatalf("a pool nobody holds prewarmed: %v %d", err, b.Warm(spec))
	}
	r1, r2 := b.Pool(1), b.Pool(2)
	if err := b.Prewarm(spec); err != nil {
		t.Fatal(err)
	}
	waitWarm(t, b, spec, 2)
	r2()
	r2() // idempotent
	if n := b.Warm(spec); n == 0 {
		t.Fatalf("releasing one holder drained the pool")
	}
	r1()
	if n := b.Warm(spec); n != 0 {
		t.Fatalf("%d warm sandboxes after the last holder released", n)
	}
	if n := descendants(os.Getpid()); n != 0 {
		t.Errorf("%d processes left after the last holder released", n)
	}
}

// TestPoolSoak runs 200 pooled calls and checks that host counts return
// to where they were.
func TestPoolSoak(t *testing.T) {
	n := 200
	if testing.Short() {
		n = 50
	}
	d := newDirs(t)
	spec := toolSpec(d)
	spec.ReadOnly = []string{filepath.Join(d.W, ".vscode")}
	t.Setenv("TMPDIR", t.TempDir())
	callWith(t, backend(t), spec, "hello") // the sealed copy and the runtime's own fds
	backend(t).Pool(0)()                   // waits for the shared backend's teardowns
	before := takeState(t)
	b := pooled(t, 2)
	warmCalls := 0
	for i := range n {
		input := "hello"
		if i%4 == 0 {
			input = "sh:echo x >/tmp/y; true"
		}
		o := callWith(t, b, spec, input)
		if o.res.ExitCode != 7 && o.res.ExitCode != 0 {
			t.Fatalf("call %d: %+v %q", i, o.res, o.stderr)
		}
		if warm(o) {
			warmCalls++
		}
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	after := settledState(t, before)
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("host state after %d pooled calls (-before +after)\n%s", n, diff)
	}
	if warmCalls == 0 {
		t.Errorf("none of %d calls was warm", n)
	}
	t.Logf("%d calls, %d warm", n, warmCalls)
}

// childrenOf lists the pids whose parent is pid.
func childrenOf(pid int) []int {
	var out []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			p, _ := strconv.Atoi(e.Name())
			out = append(out, p)
		}
	}
	return out
}

// TestBrokerDeathWarm checks that warm sandboxes waiting in a pool die
// with their broker, and that the next New sweeps their cgroups.
func TestBrokerDeathWarm(t *testing.T) {
	backend(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestBrokerChildWarm$", "-test.count=1")
	cmd.Env = append(os.Environ(), "AIRLOCK_BROKER_CHILD=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.Contains(sc.Text(), "warm-ready") {
				ready <- true
			}
		}
		close(ready)
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatal("the child broker ended before its pool was warm")
		}
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("the child broker's pool never became warm")
	}
	inits := childrenOf(cmd.Process.Pid)
	if len(inits) < 2 {
		t.Fatalf("child broker has %d sandboxes, want its 2 warm ones", len(inits))
	}
	cmd.Process.Kill()
	cmd.Wait()
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var alive []int
		for _, p := range inits {
			if _, err := os.Stat("/proc/" + strconv.Itoa(p)); err == nil {
				alive = append(alive, p)
			}
		}
		if len(alive) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("warm sandboxes %v outlived their broker", alive)
		}
	}
	if _, err := linux.New(&linux.Options{Executable: os.Args[0], Cgroups: linux.CgroupsOptional}); err != nil {
		t.Fatal(err)
	}
	left, _ := filepath.Glob("/sys/fs/cgroup/*/*/*/airlock-" + strconv.Itoa(cmd.Process.Pid) + "-*")
	more, _ := filepath.Glob("/sys/fs/cgroup/*/airlock-" + strconv.Itoa(cmd.Process.Pid) + "-*")
	if len(left)+len(more) != 0 {
		t.Fatalf("dead broker's cgroups not swept: %v %v", left, more)
	}
}

// TestBrokerChildWarm is the broker killed by TestBrokerDeathWarm: it
// fills a pool and waits.
func TestBrokerChildWarm(t *testing.T) {
	if os.Getenv("AIRLOCK_BROKER_CHILD") != "1" {
		t.Skip("runs only as the child of TestBrokerDeathWarm")
	}
	d := newDirs(t)
	warmPool(t, 2, toolSpec(d))
	fmt.Println("warm-ready")
	time.Sleep(time.Minute)
}

// TestWarmClaimLinksSpares: a warm sandbox's claim in a tree whose
// protected names are missing gives names to the spare inodes made while
// the sandbox was built (the backend's debug log counts them), and those
// placeholders hold in the sandbox as ones made by name do: writing one
// fails, and the tree is clean once the call is done.
func TestWarmClaimLinksSpares(t *testing.T) {
	backend(t) // skips where the host cannot sandbox
	logs := &linux.SyncBuffer{}
	b, err := linux.New(&linux.Options{Executable: os.Args[0], Cgroups: linux.CgroupsOptional, PoolSize: 1,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		b.Close()
		if t.Failed() {
			t.Logf("backend log:\n%s", logs.String())
		}
	})
	d := newDirs(t)
	spec := protectedSpec(t, d)
	spec.Limits.AllowUnenforced = true
	if err := b.Prewarm(spec); err != nil {
		t.Fatal(err)
	}
	waitWarm(t, b, spec, 1)
	rc := filepath.Join(d.W, ".bashrc")
	o := callWith(t, b, spec, "sh:echo planted >> "+rc+" && echo wrote; test -f "+rc+" && echo held")
	if !warm(o) || strings.Contains(o.stdout, "wrote") || !strings.Contains(o.stdout, "held") {
		t.Fatalf("warm %v, stdout %q stderr %q; want the write to %s refused and the file held", warm(o), o.stdout, o.stderr, rc)
	}
	claimed := regexp.MustCompile(`msg="sandbox claimed".* spares=(\d+)`).FindStringSubmatch(logs.String())
	if claimed == nil || claimed[1] == "0" {
		t.Fatalf("claim's log %q, want spares linked", claimed)
	}
	// The release follows the answer: wait for it.
	for deadline := time.Now().Add(10 * time.Second); ; {
		if _, err := os.Lstat(rc); errors.Is(err, os.ErrNotExist) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s still there 10 s after the call", rc)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if b, err := os.ReadFile(rc); err == nil {
		t.Fatalf("%s left with %q", rc, b)
	}
}

// readOnlySpec is spec with every mount read-only, as a tool that changes
// nothing gets it (a shape of its own).
func readOnlySpec(spec *sandbox.Spec) *sandbox.Spec {
	s := *spec
	s.Mounts = slices.Clone(spec.Mounts)
	for i := range s.Mounts {
		s.Mounts[i].Writable = false
	}
	return &s
}

// stagedPids are the pids of the warm inits b has logged as staged.
func stagedPids(t testing.TB, b *linux.Backend) []int {
	t.Helper()
	logs, ok := poolLogs.Load(b)
	if !ok {
		t.Fatal("no log for this backend")
	}
	var pids []int
	for _, m := range regexp.MustCompile(`msg="sandbox staged" pid=(\d+)`).FindAllStringSubmatch(logs.(*linux.SyncBuffer).String(), -1) {
		pid, _ := strconv.Atoi(m[1])
		pids = append(pids, pid)
	}
	return pids
}

// procStatus returns the fields of /proc/pid/status.
func procStatus(t testing.TB, pid int) map[string]string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = strings.TrimSpace(v)
		}
	}
	return out
}

// TestReadOnlyWarmLockedWhileWaiting checks that a warm sandbox whose every
// mount is read-only waits for its claim locked down already (no
// capability, seccomp's filter, no_new_privs), so that its claim has none
// of that to do, while one with a writable mount keeps its capabilities
// (in its own user namespace) until a claim has made its placeholders; and
// that either runs its call locked down.
func TestReadOnlyWarmLockedWhileWaiting(t *testing.T) {
	d := newDirs(t)
	rw := protectedSpec(t, d)
	for _, c := range []struct {
		name   string
		spec   *sandbox.Spec
		locked bool
	}{{"read-only", readOnlySpec(rw), true}, {"writable", rw, false}} {
		t.Run(c.name, func(t *testing.T) {
			b := pooled(t, 1)
			if err := b.Prewarm(c.spec); err != nil {
				t.Fatal(err)
			}
			waitWarm(t, b, c.spec, 1)
			pids := stagedPids(t, b)
			if len(pids) != 1 {
				t.Fatalf("staged inits %v, want one", pids)
			}
			st := procStatus(t, pids[0])
			locked := st["CapEff"] == "0000000000000000" && st["Seccomp"] == "2" && st["NoNewPrivs"] == "1"
			if locked != c.locked {
				t.Errorf("waiting init: CapEff %s, Seccomp %s, NoNewPrivs %s; want locked down %v", st["CapEff"], st["Seccomp"], st["NoNewPrivs"], c.locked)
			}
			if st["CapBnd"] != "0000000000000000" {
				t.Errorf("waiting init's bounding set %s, want empty", st["CapBnd"])
			}
			o := callWith(t, b, c.spec, "sh:grep -E '^(CapEff|Seccomp|NoNewPrivs):' /proc/self/status")
			if !warm(o) {
				t.Fatalf("the call was not served warm: %v", o.res.Isolation.Features)
			}
			for _, want := range []string{"CapEff:\t0000000000000000", "Seccomp:\t2", "NoNewPrivs:\t1"} {
				if !strings.Contains(o.stdout, want) {
					t.Errorf("the call's shell: %q, want %q", o.stdout, want)
				}
			}
		})
	}
}

// TestReadOnlyWarmListsPlaceholdersAtClaim checks that a read-only warm
// sandbox, locked down while it waited, gives its tool the placeholders a
// call beside it holds at its claim: those made after it was built, and
// those it found when built (a denied path's among them, which its mask
// covers since), so that its tools take none of them for a user's file;
// in a directory it lists in one read and in one too large for that.
func TestReadOnlyWarmListsPlaceholdersAtClaim(t *testing.T) {
	for _, c := range []struct {
		before bool // the placeholders are held before the sandbox is built
		large  bool // in a directory too large to list in one go
	}{{false, false}, {true, false}, {false, true}} {
		before := c.before
		t.Run(fmt.Sprintf("held-before-build=%v/large=%v", c.before, c.large), func(t *testing.T) {
			d := newDirs(t)
			if c.large {
				for i := range 2000 {
					if err := os.WriteFile(filepath.Join(d.W, fmt.Sprintf("file-with-a-rather-long-name-to-fill-dirents-%04d", i)), nil, 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			rw := protectedSpec(t, d)
			secret := filepath.Join(d.W, "secret.key") // a denied path
			rw.Masks = append(rw.Masks, secret)
			// A protected path in a directory of the user's, below the
			// tree's top: its listing is not the top's.
			if err := os.Mkdir(filepath.Join(d.W, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			nested := filepath.Join(d.W, "sub", ".env")
			rw.ReadOnly = append(rw.ReadOnly, nested)
			ro := readOnlySpec(rw)
			want := []string{filepath.Join(d.W, ".bashrc"), secret, nested}
			b := pooled(t, 1)
			hold := func() {
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan struct{})
				started := filepath.Join(d.W, "started")
				go func() {
					defer close(done)
					s := *rw
					s.Stdin, s.Stdout, s.Stderr = strings.NewReader("sh:touch "+started+"; sleep 600"), io.Discard, io.Discard
					_, _ = b.Run(ctx, &s)
				}()
				t.Cleanup(func() { cancel(); <-done })
				for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
					if _, err := os.Stat(started); err == nil {
						break
					}
					if time.Now().After(deadline) {
						t.Fatal("the holding call never started")
					}
				}
				for _, p := range want {
					if _, err := os.Lstat(p); err != nil {
						t.Fatalf("the holding call holds no placeholder at %s: %v", p, err)
					}
				}
			}
			if before {
				hold()
			}
			if err := b.Prewarm(ro); err != nil {
				t.Fatal(err)
			}
			waitWarm(t, b, ro, 1)
			if !before {
				hold()
			}
			o := callWith(t, b, ro, "hidden")
			if !warm(o) {
				t.Fatalf("the call was not served warm: %v", o.res.Isolation.Features)
			}
			got := strings.Split(o.stdout, "\n")
			for _, p := range want {
				if !slices.Contains(got, p) {
					t.Errorf("hidden %q, want %s in it", got, p)
				}
			}
		})
	}
}

// TestPoolMissWaitsForBuild checks that a call that finds its shape's
// pool empty while a sandbox is being built for it waits for that one
// instead of building its own: back to back with a pool of one, every
// call is served warm, each by the sandbox the call before it started.
// TestRefillDeferredWhileOneIsReady: the replacement of a taken warm
// sandbox is built refillDelay later while its shape has another ready
// (off the taking call's answer), and at once when the shape is empty; a
// call that finds none ready starts the deferred builds and waits for one;
// and the timer starts them by itself.
func TestRefillDeferredWhileOneIsReady(t *testing.T) {
	d := newDirs(t)
	spec := toolSpec(d)
	builds := func(b *linux.Backend) string {
		r, bu, de := b.PoolBuilds(spec)
		return fmt.Sprintf("ready %d, building %d, deferred %d", r, bu, de)
	}
	t.Run("deferred", func(t *testing.T) {
		defer linux.SetRefillDelay(time.Hour)()
		defer linux.SetMaxBuildWait(time.Minute)()
		b := warmPool(t, 2, spec)
		if o := callWith(t, b, spec, "one"); !warm(o) {
			t.Fatalf("call 1 was not served warm: %v", o.res.Isolation.Features)
		}
		if got, want := builds(b), "ready 1, building 0, deferred 1"; got != want {
			t.Fatalf("after a call with one left: %s, want %s", got, want)
		}
		// A call that holds the last one (its input does not end until
		// released), and one more that finds the shape empty.
		pr, pw := io.Pipe()
		held := make(chan out, 1)
		go func() {
			s := *spec
			var so, se bytes.Buffer
			s.Stdin, s.Stdout, s.Stderr = onlyReader{pr}, &so, &se
			res, err := b.Run(context.Background(), &s)
			if err != nil {
				t.Errorf("the held call: %v", err)
				res = &sandbox.Result{}
			}
			held <- out{res: res, stdout: so.String()}
		}()
		for r, _, _ := b.PoolBuilds(spec); r != 0; r, _, _ = b.PoolBuilds(spec) {
			select {
			case o := <-held: // it ended without holding the sandbox
				t.Fatalf("the held call ended before the next one: %q, %v", o.stdout, o.res.Isolation.Features)
			case <-time.After(time.Millisecond):
			}
		}
		if o := callWith(t, b, spec, "two"); !warm(o) {
			t.Fatalf("the call that found the shape empty was not served warm (the deferred build was not started for it): %v", o.res.Isolation.Features)
		}
		pw.Close()
		if o := <-held; !warm(o) || o.stdout != "pong: " {
			t.Fatalf("the held call: %q, %v", o.stdout, o.res.Isolation.Features)
		}
		// Its refill found the shape empty: every replacement is built.
		if _, _, de := b.PoolBuilds(spec); de != 0 {
			t.Fatalf("after the last ready one was taken: %s, want none deferred", builds(b))
		}
		waitWarm(t, b, spec, 2)
	})
	t.Run("timer", func(t *testing.T) {
		defer linux.SetRefillDelay(time.Millisecond)()
		b := warmPool(t, 2, spec)
		if o := callWith(t, b, spec, "one"); !warm(o) {
			t.Fatalf("call 1 was not served warm: %v", o.res.Isolation.Features)
		}
		waitWarm(t, b, spec, 2)
	})
}

func TestPoolMissWaitsForBuild(t *testing.T) {
	defer linux.SetMaxBuildWait(time.Minute)()
	d := newDirs(t)
	spec := toolSpec(d)
	b := warmPool(t, 1, spec)
	for i := range 8 {
		if o := callWith(t, b, spec, "hello"); !warm(o) {
			t.Fatalf("call %d was not served warm: %v", i, o.res.Isolation.Features)
		}
	}
	logs, _ := poolLogs.Load(b)
	if n := strings.Count(logs.(*linux.SyncBuffer).String(), `msg="warm sandbox awaited" found=true`); n == 0 {
		t.Error("no call waited for a sandbox being built")
	}
	// Each call that found none ready grows the pool by one (up to
	// maxExtra, 4): no more are built than the calls and what is kept.
	if n := len(stagedPids(t, b)); n > 8+1+4 {
		t.Errorf("%d sandboxes built for 8 calls with a pool of one, want at most 13", n)
	}
}

// TestPoolReleasedWhileAnotherFills checks that the last holder's release,
// which drains the pool and waits for its builds, may run while a new
// holder fills it (a server's MCP sessions share one backend, and one
// closes as another opens), a refill the new holder defers starting from
// its timer while the release waits. The release's wait was a
// sync.WaitGroup's, whose count must not rise from zero until a Wait that
// had to wait has returned (else it panics, in the release or in the
// builder, taking the broker down); go test -race reported it once in
// mcpserver's TestSessionWarmByDefault. The window is the waiter's wake-up,
// so this test is a regression check under -race, not a reliable
// reproduction.
func TestPoolReleasedWhileAnotherFills(t *testing.T) {
	defer linux.SetRefillDelay(200 * time.Millisecond)()
	d1, d2 := newDirs(t), newDirs(t)
	s1, s2 := toolSpec(d1), toolSpec(d2)
	b := pooled(t, 0)
	n := 4
	if testing.Short() {
		n = 2
	}
	for i := range n {
		r1 := b.Pool(2)
		if err := b.Prewarm(s1); err != nil {
			t.Fatal(err)
		}
		waitWarm(t, b, s1, 2)
		released := make(chan struct{})
		go func() {
			defer close(released)
			r1() // drains, and waits for the builds under way
		}()
		// The next holder comes once the release has taken s1's shape out
		// (and so is draining): before, the pool would have stayed on.
		spin(t, "the release to take s1's shape out", func() bool {
			r, bu, de := b.PoolBuilds(s1)
			return r+bu+de == 0
		})
		r2 := b.Pool(2)
		if err := b.Prewarm(s2); err != nil {
			t.Fatal(err)
		}
		spin(t, "a warm sandbox of s2", func() bool {
			r, _, _ := b.PoolBuilds(s2)
			return r > 0
		})
		// A third holder asks for more: with one ready, the refill's
		// builds wait for the timer, which starts them by itself.
		r3 := b.Pool(3)
		if err := b.Prewarm(s2); err != nil {
			t.Fatal(err)
		}
		spin(t, "the timer to start the deferred builds", func() bool {
			r, bu, de := b.PoolBuilds(s2)
			return de == 0 && r+bu >= 3
		})
		<-released
		r3()
		r2()
		if n := descendants(os.Getpid()); n != 0 {
			t.Fatalf("round %d: %d processes left after the last holder released", i, n)
		}
	}
}

// spin waits for cond without sleeping (a sleep would let the events
// between two checks happen in another order), for at most 20 seconds.
func spin(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 20s for %s", what)
		}
		runtime.Gosched()
	}
}
