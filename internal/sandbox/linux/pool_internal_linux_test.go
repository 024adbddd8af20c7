package linux

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/linux/initproto"
)

// BenchmarkTakeChecks is the host's work on a warm call's clock before
// the claim, in a plain directory with the default grant (39 protected
// paths, none there): the spec's config and shape (which pool serves it),
// and the check that the grant's host paths are as the warm sandbox was
// built over.
func BenchmarkTakeChecks(b *testing.B) {
	dir := b.TempDir()
	g, err := grant.FromFlags(dir, grant.Flags{})
	if err != nil {
		b.Fatal(err)
	}
	spec := &sandbox.Spec{Mounts: []sandbox.Mount{{Source: dir, Writable: true}}, Masks: g.Masks(), ReadOnly: g.Protected(),
		ReadOnlyDirs: g.ProtectedDirs(), Cwd: dir, Env: []string{"PATH=/usr/bin:/bin"}}
	l := withDefaults(spec.Limits)
	cfg, err := config(spec, l)
	if err != nil {
		b.Fatal(err)
	}
	be := &Backend{}
	was := be.grantPaths(cfg)
	b.Run("shape", func(b *testing.B) {
		for range b.N {
			c, err := config(spec, l)
			if err != nil {
				b.Fatal(err)
			}
			if _, ok := shapeOf(spec, c, l); !ok {
				b.Fatal("no shape")
			}
		}
	})
	b.Run("shape-remembered", func(b *testing.B) {
		for range b.N {
			c, err := config(spec, l)
			if err != nil {
				b.Fatal(err)
			}
			if _, ok := be.shape(spec, c, l); !ok {
				b.Fatal("no shape")
			}
		}
	})
	b.Run("samePaths", func(b *testing.B) {
		for range b.N {
			if !be.samePaths(was) {
				b.Fatal("the paths changed")
			}
		}
	})
}

// TestShapeCoversConfig: two configs that differ in any one field the
// init builds from are of different shapes, and the same config is of
// the same shape, so a warm sandbox is only ever taken for what it was
// built for.
func TestShapeCoversConfig(t *testing.T) {
	base := shapeBase
	l := withDefaults(sandbox.Limits{})
	spec := &sandbox.Spec{}
	k0, ok := shapeOf(spec, base(), l)
	if !ok {
		t.Fatal("no shape")
	}
	if k, _ := shapeOf(spec, base(), l); k != k0 {
		t.Fatal("the same config has two shapes")
	}
	// Each sandbox's own cgroup name is not part of its shape.
	joined := base()
	joined.Join = "airlock-1-2"
	if k, _ := shapeOf(spec, joined, l); k != k0 {
		t.Fatal("the sandbox's cgroup name changed the shape")
	}
	for name, change := range shapeChanges() {
		c := base()
		change(c)
		k, ok := shapeOf(spec, c, l)
		if !ok || k.full == k0.full {
			t.Errorf("%s: the changed config has the same shape", name)
		}
	}
	// The same grant's mounts made read-only (a tool that changes
	// nothing) are another shape of the same grant, which must not drain
	// the grant's other shapes; another mount is another grant.
	ro := base()
	ro.Mounts[0].Writable = false
	if k, _ := shapeOf(spec, ro, l); k.grant != k0.grant {
		t.Error("read-only mounts of the same grant count as another grant")
	}
	other := base()
	other.Mounts[0].Source = "/h/other"
	if k, _ := shapeOf(spec, other, l); k.grant == k0.grant {
		t.Error("another mount's source counts as the same grant")
	}
}

// shapeBase is the config TestShapeCoversConfig and TestShapeRemembered
// change one field of at a time.
func shapeBase() *initproto.Config {
	return &initproto.Config{Mounts: []initproto.Mount{{Source: "/h/w", Target: "/w", Writable: true}}, ReadOnly: []string{"/w/.git"},
		ReadOnlyDirs: []string{"/w/.git"}, Masks: []string{"/w/.env"}, Env: []string{"A=1"}, Cwd: "/w", Hostname: "airlock", TmpBytes: 1, FileBytes: 2, OpenFiles: 3, Procs: 4}
}

// shapeChanges are changes of one field each that make another shape.
func shapeChanges() map[string]func(c *initproto.Config) {
	return map[string]func(c *initproto.Config){
		"mount":     func(c *initproto.Config) { c.Mounts[0].Writable = false },
		"protected": func(c *initproto.Config) { c.ReadOnly = nil },
		"dirs":      func(c *initproto.Config) { c.ReadOnlyDirs = nil },
		"mask":      func(c *initproto.Config) { c.Masks = []string{"/w/.envrc"} },
		"env":       func(c *initproto.Config) { c.Env = []string{"A=2"} },
		"cwd":       func(c *initproto.Config) { c.Cwd = "/" },
		"tmp":       func(c *initproto.Config) { c.TmpBytes++ },
		"file size": func(c *initproto.Config) { c.FileBytes++ },
		"files":     func(c *initproto.Config) { c.OpenFiles++ },
		"procs":     func(c *initproto.Config) { c.Procs++ },
		"seccomp":   func(c *initproto.Config) { c.Seccomp = !c.Seccomp },
		"hostname":  func(c *initproto.Config) { c.Hostname = "other" },
	}
}

// TestShapeRemembered checks that Backend.shape, which remembers the last
// config's shape, gives shapeOf's answer for every config: the same one
// again, one changed in any field or limit after it, and the first one
// after its caller changed the config it passed (the memory holds a copy).
func TestShapeRemembered(t *testing.T) {
	l := withDefaults(sandbox.Limits{})
	spec := &sandbox.Spec{}
	be := &Backend{}
	k0, _ := shapeOf(spec, shapeBase(), l)
	for range 2 {
		if k, ok := be.shape(spec, shapeBase(), l); !ok || k != k0 {
			t.Fatal("the remembered shape differs from shapeOf's")
		}
	}
	joined := shapeBase()
	joined.Join = "airlock-1-2"
	if k, _ := be.shape(spec, joined, l); k != k0 {
		t.Fatal("the sandbox's cgroup name changed the shape")
	}
	for name, change := range shapeChanges() {
		be.shape(spec, shapeBase(), l)
		c := shapeBase()
		change(c)
		want, _ := shapeOf(spec, c, l)
		if k, ok := be.shape(spec, c, l); !ok || k != want || k == k0 {
			t.Errorf("%s: the changed config got the remembered shape", name)
		}
	}
	be.shape(spec, shapeBase(), l)
	more := l
	more.mem++
	want, _ := shapeOf(spec, shapeBase(), more)
	if k, _ := be.shape(spec, shapeBase(), more); k != want || k == k0 {
		t.Error("another memory limit got the remembered shape")
	}
	c := shapeBase()
	be.shape(spec, c, l)
	c.Masks[0] = "/w/.envrc"
	if k, _ := be.shape(spec, c, l); k == k0 {
		t.Error("a change to the caller's config reached the remembered one")
	}
	if _, ok := be.shape(spec, &initproto.Config{}, l); !ok {
		t.Error("an empty config has no shape")
	}
	if _, ok := be.shape(&sandbox.Spec{TTY: true}, shapeBase(), l); ok {
		t.Error("a terminal's spec got a shape")
	}
}

// BenchmarkLimitCounters is what a call's result reads from its cgroup on
// the call's clock: the peak memory and the memory and process limits'
// hit counters.
func BenchmarkLimitCounters(b *testing.B) {
	h := detectCgroups("")
	if h.version == 0 {
		b.Skip("no cgroups: " + h.reason)
	}
	cg, err := h.create(fmt.Sprintf("airlock-%d-bench", os.Getpid()), 64<<20, 16, initThreads)
	if err != nil {
		b.Fatal(err)
	}
	defer cg.destroy()
	for range b.N {
		if cg.peakMemory() < 0 || cg.memoryHit() || cg.pidsMaxHits() != 0 {
			b.Fatal("a limit was hit by nothing")
		}
	}
}

// TestCounters: a flat keyed file's values by key, 0 for a key it lacks
// or a file that cannot be read.
func TestCounters(t *testing.T) {
	p := filepath.Join(t.TempDir(), "memory.events")
	if err := os.WriteFile(p, []byte("low 0\nhigh 0\nmax 12\noom 0\noom_kill 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var byPath cgroup
	if got := byPath.counterValues(p, "oom_kill", "oom", "max", "absent"); !slices.Equal(got, []int64{3, 0, 12, 0}) {
		t.Errorf("counters = %v, want [3 0 12 0]", got)
	}
	if got := byPath.counter(filepath.Join(t.TempDir(), "missing"), "max"); got != 0 {
		t.Errorf("counter of a missing file = %d, want 0", got)
	}
	// Through a descriptor kept open (openCounters): each read is of the
	// file as it is then.
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	kept := cgroup{counters: map[string]int{p: fd}}
	defer kept.closeCounters()
	if got := kept.counter(p, "oom_kill"); got != 3 {
		t.Errorf("counter through a kept descriptor = %d, want 3", got)
	}
	if err := os.WriteFile(p, []byte("max 12\noom 0\noom_kill 4"+strings.Repeat(" ", 600)+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := kept.counterValues(p, "oom_kill", "max"); !slices.Equal(got, []int64{4, 12}) {
		t.Errorf("counters through a kept descriptor after a change = %v, want [4 12]", got)
	}
}

// TestTCPBuffersCharged: on cgroup v1 a sandbox's cgroup limits its TCP
// buffers to its memory limit (v1 charges them to nothing otherwise: a
// sandbox under 64 MiB held 600 MB of the machine's tcp_mem).
func TestTCPBuffersCharged(t *testing.T) {
	h := detectCgroups("")
	if h.version != 1 {
		t.Skip("not cgroup v1 (v2 charges socket memory to memory.max)")
	}
	cg, err := h.create(fmt.Sprintf("airlock-%d-tcp", os.Getpid()), 64<<20, 16, initThreads)
	if err != nil {
		t.Fatal(err)
	}
	defer cg.destroy()
	b, err := os.ReadFile(filepath.Join(cg.dirs[0], "memory.kmem.tcp.limit_in_bytes"))
	if os.IsNotExist(err) {
		t.Skip("this kernel has no memory.kmem.tcp")
	}
	if err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(64<<20) {
		t.Fatalf("memory.kmem.tcp.limit_in_bytes = %q, %v; want %d", b, err, 64<<20)
	}
}
