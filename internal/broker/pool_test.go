package broker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandboxtest"
)

// warmer is a backend with a pool (the Linux backend).
type warmer interface {
	Warm(spec *sandbox.Spec) int
}

// pooledBackend returns the native backend if it keeps warm sandboxes.
func pooledBackend(t testing.TB) (sandbox.Backend, warmer) {
	t.Helper()
	b := sandboxtest.Native(t)
	w, ok := b.(warmer)
	if !ok {
		t.Skip("the native backend of this platform keeps no warm sandboxes")
	}
	return b, w
}

// waitWarm waits until the session's shape for tool has n warm sandboxes.
func waitWarm(t testing.TB, w warmer, g *grant.Grant, tool string, n int) {
	t.Helper()
	spec := broker.ToolSpecFor(g, tool)
	for deadline := time.Now().Add(20 * time.Second); w.Warm(spec) < n; {
		if time.Now().After(deadline) {
			t.Fatalf("%d warm sandboxes after 20s, want %d", w.Warm(spec), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestPooledSession checks that a session's calls run in warm sandboxes,
// each used once, and that Close leaves none and no placeholder.
func TestPooledSession(t *testing.T) {
	b, w := pooledBackend(t)
	f := newFixture(t, grant.Limits{})
	s := f.open(t, b, func(o *broker.Options) { o.Pool = broker.DefaultPool })
	for i := range 4 {
		waitWarm(t, w, f.grant, "shell", broker.DefaultPool)
		res := call(t, s, "shell", `{"command":"ls -a /tmp; echo x > /tmp/marker-`+strconv.Itoa(i)+`"}`)
		if res.Class != broker.ClassOK || strings.Contains(res.Output.Content, "marker") {
			t.Fatalf("call %d: class %s, output %q (another call's /tmp?)", i, res.Class, res.Output.Content)
		}
		if iso := res.Output.Meta.Isolation; iso == nil || !slices.Contains(iso.Features, "warm") || !slices.Contains(iso.Features, "seccomp") {
			t.Fatalf("call %d isolation %+v, want warm and seccomp", i, iso)
		}
	}
	waitWarm(t, w, f.grant, "read_file", 1)
	res := call(t, s, "read_file", `{"path":"hello.txt"}`)
	if res.Class != broker.ClassOK || !strings.HasSuffix(res.Output.Content, "hello, sandbox\n") {
		t.Fatalf("read_file: class %s, output %+v", res.Class, res.Output)
	}
	for _, r := range calls(records(t, f.records)) {
		if !slices.Contains(r.Isolation, "warm") {
			t.Errorf("record %s: isolation %v, want warm", r.CallID, r.Isolation)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if n := w.Warm(broker.ToolSpecFor(f.grant, "read_file")); n != 0 {
		t.Errorf("%d warm sandboxes after Close", n)
	}
	if entries, _ := os.ReadDir(f.ws); len(entries) != 1 {
		t.Errorf("workspace after Close holds %d entries, want only hello.txt", len(entries))
	}
}

// TestDefaultPoolNoPlaceholders: by default a session keeps warm
// sandboxes even where the grant's protected paths are missing, and while
// they wait the tree holds no placeholder; a call served warm still finds
// those paths held, and the tree is clean again between calls.
func TestDefaultPoolNoPlaceholders(t *testing.T) {
	b, w := pooledBackend(t)
	f := newFixture(t, grant.Limits{})
	var missing []string
	for _, p := range f.grant.Protected() {
		if _, err := os.Lstat(p); err != nil && strings.HasPrefix(p, f.ws+"/") {
			missing = append(missing, p)
		}
	}
	if !slices.Contains(missing, filepath.Join(f.ws, ".bashrc")) {
		t.Fatalf("the fixture's missing protected paths %v lack .bashrc", missing)
	}
	s := f.open(t, b, nil)
	clean := func(when string) {
		t.Helper()
		entries, _ := os.ReadDir(f.ws)
		if len(entries) != 1 {
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			t.Fatalf("%s the tree holds %v, want only hello.txt", when, names)
		}
	}
	for i := range 3 {
		waitWarm(t, w, f.grant, "shell", broker.DefaultPool)
		// The last call's sandbox releases its placeholders as it is torn
		// down, after the call has answered: wait for that, not a moment.
		// Warm sandboxes that held any would keep the tree from ever
		// being clean.
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			if entries, _ := os.ReadDir(f.ws); len(entries) == 1 || time.Now().After(deadline) {
				break
			}
		}
		clean("with warm sandboxes waiting,")
		waitWarm(t, w, f.grant, "shell", broker.DefaultPool)
		res := call(t, s, "shell", `{"command":"echo x > .bashrc || echo refused; test -f .bashrc && echo held"}`)
		if iso := res.Output.Meta.Isolation; res.Class != broker.ClassOK || iso == nil || !slices.Contains(iso.Features, "warm") {
			t.Fatalf("call %d: class %s isolation %+v, want a warm sandbox", i, res.Class, iso)
		}
		if !strings.Contains(res.Output.Content, "refused") || !strings.Contains(res.Output.Content, "held") {
			t.Fatalf("call %d: .bashrc was not held read-only in the warm sandbox: %q", i, res.Output.Content)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	clean("after Close")
}

// TestPoolOff checks that Pool < 0 keeps no warm sandbox.
func TestPoolOff(t *testing.T) {
	b, w := pooledBackend(t)
	f := newFixture(t, grant.Limits{})
	s := f.open(t, b, func(o *broker.Options) { o.Pool = -1 })
	res := call(t, s, "read_file", `{"path":"hello.txt"}`)
	if iso := res.Output.Meta.Isolation; res.Class != broker.ClassOK || iso == nil || slices.Contains(iso.Features, "warm") {
		t.Fatalf("class %s isolation %+v, want a cold sandbox", res.Class, iso)
	}
	if n := w.Warm(broker.ToolSpecFor(f.grant, "read_file")); n != 0 {
		t.Errorf("%d warm sandboxes with the pool off", n)
	}
}

// TestPooledLimits checks that warm sandboxes still end at their limits
// and the broker names them.
func TestPooledLimits(t *testing.T) {
	b, w := pooledBackend(t)
	// 2 s: an echo in a warm sandbox ends well within it on a loaded
	// machine; the idle wait below is longer.
	f := newFixture(t, grant.Limits{Time: 2 * time.Second})
	s := f.open(t, b, func(o *broker.Options) { o.Pool = broker.DefaultPool })
	waitWarm(t, w, f.grant, "shell", 1)
	time.Sleep(2500 * time.Millisecond) // idle in the pool longer than the limit
	res := call(t, s, "shell", `{"command":"echo ok"}`)
	if res.Class != broker.ClassOK {
		t.Fatalf("a warm sandbox's idle time counted: class %s %q", res.Class, res.Output.Content)
	}
	waitWarm(t, w, f.grant, "shell", 1)
	res = call(t, s, "shell", `{"command":"sleep 987703"}`)
	// Either timer may end it: the sandbox's (class timeout) or the shell
	// tool's own at the same limit, when the host's is late on a loaded
	// machine (class ok, a tool-level failure); both name the time limit.
	timedOut := res.Class == broker.ClassTimeout || (res.Class == broker.ClassOK && res.Output.IsError)
	if !timedOut || res.Output.Meta.Limit != "time" || !slices.Contains(res.Output.Meta.Isolation.Features, "warm") {
		t.Fatalf("class %s limit %q isolation %+v, want a warm timeout", res.Class, res.Output.Meta.Limit, res.Output.Meta.Isolation)
	}
}

// benchSession opens a pooled session over a workspace holding a 4 KiB
// file, with read_file's and shell's output cap raised above it.
func benchSession(b *testing.B, pool int) (*broker.Session, *grant.Grant, string) {
	ws := b.TempDir()
	p := filepath.Join(ws, "four-k.txt")
	if err := os.WriteFile(p, []byte(strings.Repeat("airlock\n", 512)), 0o644); err != nil {
		b.Fatal(err)
	}
	g, err := grant.FromFlags(ws, grant.Flags{})
	if err != nil {
		b.Fatal(err)
	}
	s, err := broker.Open(&broker.Options{Grant: g, Backend: sandboxtest.Native(b), RecordsDir: b.TempDir(), Pool: pool, MaxConcurrent: 16})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s, g, p
}

// benchCalls times calls of name with args; with a warmer, each timed
// call starts with the pool full, as between an agent's calls.
func benchCalls(b *testing.B, s *broker.Session, g *grant.Grant, w warmer, name, args string) {
	b.Helper()
	ds := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if w != nil {
			b.StopTimer()
			waitWarm(b, w, g, name, broker.DefaultPool)
			b.StartTimer()
		}
		t := time.Now()
		res, err := s.Call(context.Background(), name, json.RawMessage(args))
		ds = append(ds, time.Since(t))
		if err != nil || res.Class != broker.ClassOK {
			b.Fatalf("%v %+v", err, res)
		}
	}
	b.StopTimer()
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Nanoseconds()), "p50-ns")
}

// BenchmarkSessionReadFileWarm is read_file of a 4 KiB file through a
// session whose pool is full.
func BenchmarkSessionReadFileWarm(b *testing.B) {
	be, w := pooledBackend(b)
	_ = be
	s, g, p := benchSession(b, broker.DefaultPool)
	benchCalls(b, s, g, w, "read_file", fmt.Sprintf(`{"path":%q}`, p))
}

// BenchmarkSessionReadFileCold is the same call with no pool.
func BenchmarkSessionReadFileCold(b *testing.B) {
	s, g, p := benchSession(b, -1)
	benchCalls(b, s, g, nil, "read_file", fmt.Sprintf(`{"path":%q}`, p))
}

// BenchmarkSessionShellWarm is a shell call (cat of the file) through a
// session whose pool is full.
func BenchmarkSessionShellWarm(b *testing.B) {
	_, w := pooledBackend(b)
	s, g, p := benchSession(b, broker.DefaultPool)
	benchCalls(b, s, g, w, "shell", fmt.Sprintf(`{"command":"cat %s"}`, p))
}

// BenchmarkSessionCatDirect is the baseline: fork+exec of cat on the file.
func BenchmarkSessionCatDirect(b *testing.B) {
	_, _, p := benchSession(b, -1)
	ds := make([]time.Duration, 0, b.N)
	for i := 0; i < b.N; i++ {
		t := time.Now()
		if out, err := exec.Command("cat", p).Output(); err != nil || len(out) != 4096 {
			b.Fatal(err, len(out))
		}
		ds = append(ds, time.Since(t))
	}
	slices.Sort(ds)
	b.ReportMetric(float64(ds[len(ds)/2].Nanoseconds()), "p50-ns")
}

// rssKiB is this process's resident set size.
func rssKiB(b *testing.B) float64 {
	st, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Skip("no /proc/self/status")
	}
	for _, line := range strings.Split(string(st), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			n, _ := strconv.ParseFloat(f[1], 64)
			return n
		}
	}
	b.Fatal("no VmRSS")
	return 0
}

// BenchmarkSessionMemory reports the broker's resident size with a pooled
// session idle and with 16 calls in flight, and the memory charged to one
// warm idle sandbox (its cgroup's usage), once per iteration.
func BenchmarkSessionMemory(b *testing.B) {
	_, w := pooledBackend(b)
	var idle, busy, sandboxKiB []float64
	for i := 0; i < b.N; i++ {
		s, g, _ := benchSession(b, broker.DefaultPool)
		waitWarm(b, w, g, "shell", broker.DefaultPool)
		time.Sleep(200 * time.Millisecond)
		idle = append(idle, rssKiB(b))
		if k := warmCgroupKiB(); k > 0 {
			sandboxKiB = append(sandboxKiB, k)
		}
		var wg sync.WaitGroup
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if res, err := s.Call(context.Background(), "shell", json.RawMessage(`{"command":"sleep 1.5"}`)); err != nil || res.Class != broker.ClassOK {
					b.Errorf("%v %+v", err, res)
				}
			}()
		}
		time.Sleep(time.Second)
		busy = append(busy, rssKiB(b))
		wg.Wait()
		s.Close()
	}
	med := func(xs []float64) float64 {
		if len(xs) == 0 {
			return 0
		}
		slices.Sort(xs)
		return xs[len(xs)/2]
	}
	b.ReportMetric(med(idle), "rss-idle-KiB")
	b.ReportMetric(med(busy), "rss-16-calls-KiB")
	b.ReportMetric(med(sandboxKiB), "warm-sandbox-KiB")
}

// warmCgroupKiB is the median memory usage of this process's sandbox
// cgroups (the warm, idle ones when nothing runs).
func warmCgroupKiB() float64 {
	var us []float64
	for _, pat := range []string{"/sys/fs/cgroup/memory/*/*/airlock-%d-*", "/sys/fs/cgroup/memory/airlock-%d-*", "/sys/fs/cgroup/*/airlock-%d-*", "/sys/fs/cgroup/airlock-%d-*"} {
		dirs, _ := filepath.Glob(fmt.Sprintf(pat, os.Getpid()))
		for _, d := range dirs {
			for _, f := range []string{"memory.usage_in_bytes", "memory.current"} {
				if b, err := os.ReadFile(filepath.Join(d, f)); err == nil {
					n, _ := strconv.ParseFloat(strings.TrimSpace(string(b)), 64)
					us = append(us, n/1024)
					break
				}
			}
		}
	}
	if len(us) == 0 {
		return 0
	}
	slices.Sort(us)
	return us[len(us)/2]
}
