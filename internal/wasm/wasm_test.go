package wasm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/wasm/wasmtest"
	"github.com/airlockhq/airlock/wire"
	"github.com/google/go-cmp/cmp"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/experimental"
)

func TestMain(m *testing.M) {
	code := m.Run()
	wasmtest.Cleanup()
	os.Exit(code)
}

var (
	engOnce sync.Once
	eng     *Engine
	engErr  error
)

// testEngine is one engine for the package's tests.
func testEngine(t *testing.T) *Engine {
	t.Helper()
	engOnce.Do(func() {
		eng, engErr = NewEngine(context.Background())
	})
	if engErr != nil {
		t.Fatal(engErr)
	}
	return eng
}

func compile(t *testing.T, wasm []byte) *Module {
	t.Helper()
	m, err := testEngine(t).Compile(context.Background(), wasm)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func probe(t *testing.T) *Module {
	t.Helper()
	b, err := os.ReadFile(wasmtest.Build(t, "testdata/probe"))
	if err != nil {
		t.Fatal(err)
	}
	return compile(t, b)
}

// run runs the probe with args and returns its stdout and outcome.
func run(t *testing.T, m *Module, cfg Config, args ...string) (string, *Outcome) {
	t.Helper()
	var out bytes.Buffer
	cfg.Args = append([]string{"probe"}, args...)
	cfg.Stdout = &out
	if cfg.Stderr == nil {
		cfg.Stderr = &out
	}
	if cfg.Time == 0 {
		cfg.Time = time.Minute
	}
	o, err := testEngine(t).Run(context.Background(), m, &cfg)
	if err != nil {
		t.Fatalf("run %v: %v", args, err)
	}
	return out.String(), o
}

// world makes a granted directory and a secret one beside it.
func world(t *testing.T) (granted, secret string) {
	t.Helper()
	base := tempDir(t) // resolved: a preopen is opened through no symlink
	granted, secret = filepath.Join(base, "granted"), filepath.Join(base, "secret")
	for _, d := range []string{granted, secret} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(granted, "file.txt"), "granted")
	write(t, filepath.Join(secret, "key"), "SECRET")
	return granted, secret
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func lines(s string) []string { return strings.Split(strings.TrimSpace(s), "\n") }

func TestUngrantedDirectoryIsInvisible(t *testing.T) {
	m := probe(t)
	granted, secret := world(t)
	cfg := Config{Dirs: []Dir{{Host: granted, Guest: granted}}}
	out, _ := run(t, m, cfg, "ls", granted)
	if out != "ok file.txt\n" {
		t.Errorf("ls of the granted directory: %q", out)
	}
	for _, p := range []string{secret, filepath.Dir(secret), "/", "/etc", "/proc/self"} {
		out, _ := run(t, m, cfg, "ls", p)
		if !strings.HasPrefix(out, "err") {
			t.Errorf("ls %s: %q, want an error", p, out)
		}
	}
	out, _ = run(t, m, cfg, "read", filepath.Join(secret, "key"), "/etc/passwd", "/etc/hostname")
	for _, l := range lines(out) {
		if !strings.HasPrefix(l, "err") || strings.Contains(l, "SECRET") {
			t.Errorf("read outside the grant: %q", l)
		}
	}
}

func TestReadOnlyPreopenRefusesWrites(t *testing.T) {
	m := probe(t)
	granted, _ := world(t)
	before, _ := os.Stat(filepath.Join(granted, "file.txt"))
	out, _ := run(t, m, Config{Dirs: []Dir{{Host: granted, Guest: granted, ReadOnly: true}}}, "mutate", granted)
	ls := lines(out)
	if len(ls) != 9 {
		t.Fatalf("mutate printed %d lines, want 9:\n%s", len(ls), out)
	}
	for _, l := range ls {
		// Go's os.Chmod on wasip1 only stats the file (WASI has no chmod):
		// its "ok" changes nothing, as the mode check below shows.
		if !strings.HasPrefix(l, "err") && l != "ok chmod" {
			t.Errorf("write on a read-only preopen: %q", l)
		}
	}
	ents, _ := os.ReadDir(granted)
	if len(ents) != 1 {
		t.Errorf("the read-only directory changed: %v", ents)
	}
	after, _ := os.Stat(filepath.Join(granted, "file.txt"))
	if b, _ := os.ReadFile(filepath.Join(granted, "file.txt")); string(b) != "granted" || after.Mode() != before.Mode() || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("file.txt changed: %q %v %v", b, after.Mode(), after.ModTime())
	}
	// The same on a read-write preopen works, so the refusals above are
	// the grant's and not the probe's.
	out, _ = run(t, m, Config{Dirs: []Dir{{Host: granted, Guest: granted}}}, "write", filepath.Join(granted, "new.txt"), "hi")
	if out != "ok\n" {
		t.Errorf("write on a read-write preopen: %q", out)
	}
}

func TestPathsCannotLeaveAPreopen(t *testing.T) {
	m := probe(t)
	granted, secret := world(t)
	// Links planted on the host beforehand, relative and absolute.
	if err := os.Symlink("../secret", filepath.Join(granted, "rel")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(granted, "abs")); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Dirs: []Dir{{Host: granted, Guest: granted}}, Env: []string{"PWD=" + granted}}
	// A link the capsule plants itself.
	if out, _ := run(t, m, cfg, "symlink", "../../../../../..", filepath.Join(granted, "up")); out != "ok\n" {
		t.Fatalf("planting a relative link: %q", out)
	}
	if out, _ := run(t, m, cfg, "symlink", secret, filepath.Join(granted, "planted")); !strings.HasPrefix(out, "err") {
		t.Errorf("planting an absolute link: %q, want refused", out)
	}
	tries := []string{
		filepath.Join(granted, "..", "secret", "key"),
		granted + "/../secret/key",
		"../secret/key",
		"../../../../../../" + secret + "/key",
		"/" + secret + "/key",
		"//" + secret[1:] + "/key",
		filepath.Join(granted, "rel", "key"),
		filepath.Join(granted, "abs", "key"),
		filepath.Join(granted, "up") + secret + "/key",
		"rel/key",
		"up/etc/passwd",
	}
	out, _ := run(t, m, cfg, append([]string{"read"}, tries...)...)
	ls := lines(out)
	if len(ls) != len(tries) {
		t.Fatalf("read printed %d lines, want %d:\n%s", len(ls), len(tries), out)
	}
	for _, l := range ls {
		if !strings.HasPrefix(l, "err") || strings.Contains(l, "SECRET") {
			t.Errorf("escaped: %q", l)
		}
	}
	// Writes through the same links land nowhere outside.
	run(t, m, cfg, "write", filepath.Join(granted, "rel", "dropped"), "x")
	run(t, m, cfg, "write", "../secret/dropped", "x")
	if _, err := os.Stat(filepath.Join(secret, "dropped")); err == nil {
		t.Error("a write through a link landed outside the preopen")
	}
}

func TestDeniedAndProtectedInsideAPreopen(t *testing.T) {
	m := probe(t)
	granted, _ := world(t)
	denied := filepath.Join(granted, "private")
	hooks := filepath.Join(granted, ".git", "hooks")
	if err := os.MkdirAll(hooks, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(denied, 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(denied, "key"), "SECRET")
	g := testGrant(t, granted, "[paths]\nread_write = [\".\"]\ndeny = [\"private\"]\n")
	cfg := Config{Dirs: []Dir{{Host: granted, Guest: granted, Grant: g}}}
	if out, _ := run(t, m, cfg, "ls", granted); out != "ok .git file.txt\n" {
		t.Errorf("ls: %q, want the denied directory left out", out)
	}
	run(t, m, cfg, "symlink", "private", filepath.Join(granted, "alias"))
	run(t, m, cfg, "symlink", ".git/hooks", filepath.Join(granted, "h"))
	out, _ := run(t, m, cfg, "read", filepath.Join(denied, "key"), filepath.Join(granted, "alias", "key"))
	for _, l := range lines(out) {
		if !strings.HasPrefix(l, "err") || strings.Contains(l, "SECRET") {
			t.Errorf("denied path read: %q", l)
		}
	}
	for _, p := range []string{filepath.Join(hooks, "pre-commit"), filepath.Join(granted, "h", "pre-commit")} {
		if out, _ := run(t, m, cfg, "write", p, "#!/bin/sh\necho pwned"); !strings.HasPrefix(out, "err") {
			t.Errorf("write %s: %q, want refused", p, out)
		}
	}
	if _, err := os.Stat(filepath.Join(hooks, "pre-commit")); err == nil {
		t.Error("a protected path was written")
	}
}

func TestMemoryBombStopsAtTheLimit(t *testing.T) {
	m := probe(t)
	const limit = 64 << 20
	out, o := run(t, m, Config{Memory: limit}, "membomb")
	if o.ExitCode == 0 {
		t.Errorf("the bomb exited 0:\n%s", out)
	}
	if !o.Hit("memory") {
		t.Errorf("limits hit %v, want memory", o.LimitsHit)
	}
	if o.PeakMemory > limit {
		t.Errorf("memory grew to %d, past the limit %d", o.PeakMemory, limit)
	}
	if !strings.Contains(out, "allocated 8 MiB") {
		t.Errorf("the bomb never ran:\n%s", out)
	}
}

func TestInfiniteLoopStopsAtTheDeadline(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*testing.T) *Module
		args []string
	}{
		{"wasm loop", func(t *testing.T) *Module { return compile(t, wasmtest.Loop()) }, nil},
		{"go loop", probe, []string{"loop"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, o := run(t, tc.mod(t), Config{Time: 300 * time.Millisecond}, tc.args...)
			if !o.Hit("time") {
				t.Errorf("outcome %+v, want the time limit hit", o)
			}
		})
	}
}

func TestTrapIsReportedWithItsFunction(t *testing.T) {
	_, o := run(t, compile(t, wasmtest.Trap()), Config{})
	if o.Trap != "unreachable" || !strings.Contains(o.Func, "boom") {
		t.Errorf("trap %q in %q, want unreachable in boom", o.Trap, o.Func)
	}
}

func TestExitCodeEnvAndArgsPassThrough(t *testing.T) {
	m := probe(t)
	if _, o := run(t, m, Config{}, "exit", "7"); o.ExitCode != 7 {
		t.Errorf("exit code %d, want 7", o.ExitCode)
	}
	out, _ := run(t, m, Config{Env: []string{"A=1", "B=two"}}, "env")
	if out != "ok A=1 B=two\n" {
		t.Errorf("env: %q, want only the granted environment", out)
	}
	out, _ = run(t, m, Config{}, "args", "x", "y z")
	if out != "ok probe args x y z\n" {
		t.Errorf("args: %q", out)
	}
}

func TestOutputCap(t *testing.T) {
	m := probe(t)
	out, o := run(t, m, Config{Output: 10}, "args", "0123456789", "more")
	if len(out) != 10 || !o.Hit("output") || o.OmittedBytes == 0 {
		t.Errorf("output %q, outcome %+v: want 10 bytes and the output limit hit", out, o)
	}
}

func TestToolCallsReachTheToolFunc(t *testing.T) {
	m := probe(t)
	var got []string
	var mu sync.Mutex
	tools := func(_ context.Context, name string, args json.RawMessage) wire.ToolOutput {
		mu.Lock()
		got = append(got, name+" "+string(args))
		mu.Unlock()
		return wire.ToolOutput{Content: "hello from " + name}
	}
	out, _ := run(t, m, Config{Tools: tools}, "tool", "read_file", `{"path":"x"}`)
	if out != `ok {"content":"hello from read_file"}`+"\n" {
		t.Errorf("tool output %q", out)
	}
	if len(got) != 1 || got[0] != `read_file {"path":"x"}` {
		t.Errorf("the tool func saw %q", got)
	}
	out, _ = run(t, m, Config{}, "tool", "read_file", `{}`)
	if !strings.Contains(out, `"is_error":true`) {
		t.Errorf("a call with no tools: %q, want an error result", out)
	}
}

func TestTwoCapsulesAtOnceSeeNothingOfEachOther(t *testing.T) {
	m := probe(t)
	a, _ := world(t)
	b, _ := world(t)
	write(t, filepath.Join(a, "mine"), "A")
	write(t, filepath.Join(b, "mine"), "B")
	var wg sync.WaitGroup
	outs := make([]string, 2)
	for i, d := range []struct{ mine, other string }{{a, b}, {b, a}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var out bytes.Buffer
			o, err := testEngine(t).Run(context.Background(), m, &Config{
				Args:   []string{"probe", "read", filepath.Join(d.mine, "mine"), filepath.Join(d.other, "mine")},
				Dirs:   []Dir{{Host: d.mine, Guest: d.mine}},
				Stdout: &out, Time: time.Minute,
			})
			if err != nil || o.ExitCode != 0 {
				t.Errorf("run %d: %v %+v", i, err, o)
			}
			outs[i] = out.String()
		}()
	}
	wg.Wait()
	for i, want := range []string{"A", "B"} {
		ls := lines(outs[i])
		if len(ls) != 2 || !strings.HasSuffix(ls[0], `"`+want+`"`) || !strings.HasPrefix(ls[1], "err") {
			t.Errorf("capsule %s saw:\n%s", want, outs[i])
		}
	}
}

func TestModuleImportingUnknownHostIsRefused(t *testing.T) {
	mod := wasmtest.Module(
		wasmtest.Section(wasmtest.SecType, wasmtest.Vec([]byte{0x60, 0, 0})),
		wasmtest.Section(wasmtest.SecImport, wasmtest.Vec(append(append(wasmtest.Name("env"), wasmtest.Name("socket")...), 0x00, 0))),
	)
	_, err := testEngine(t).Compile(context.Background(), mod)
	if err == nil || !strings.Contains(err.Error(), "env.socket") {
		t.Errorf("compile: %v, want a refusal naming env.socket", err)
	}
}

// TestMemoryPastTheLimitIsRefused: a module whose memory starts larger
// than the limit is refused before it is instantiated, whether it exports
// that memory or not; an unexported one panicked wazero inside the broker
// and took airlock mcp down (red team).
func TestMemoryPastTheLimitIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name     string
		min, max uint64
		export   bool
	}{
		{"exported", 512, 0, true},
		{"unexported", 512, 0, false},
		{"unexported with a max", 512, 1024, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := compile(t, wasmtest.Memory(tc.min, tc.max, tc.export))
			_, err := testEngine(t).Run(context.Background(), m, &Config{Memory: 16 << 20, Time: time.Minute})
			if !errors.Is(err, ErrMemory) {
				t.Errorf("Run: %v, want %v", err, ErrMemory)
			}
			// Under the limit it runs.
			o, err := testEngine(t).Run(context.Background(), m, &Config{Memory: 64 << 20, Time: time.Minute})
			if err != nil || o.ExitCode != 0 {
				t.Errorf("under the limit: %v %+v", err, o)
			}
		})
	}
}

// TestPanicInsideWazeroIsAnError: the backstop behind the memory check. A
// panic inside wazero while it instantiates (here: the memory allocator
// refusing a minimum past its limit, which the check above now stops
// first) is the run's error, never the broker's crash.
func TestPanicInsideWazeroIsAnError(t *testing.T) {
	m := compile(t, wasmtest.Memory(512, 0, false))
	ctx := experimental.WithMemoryAllocator(context.Background(), &memory{limit: 16 << 20})
	_, err := instantiate(ctx, testEngine(t).rt, m.compiled, wazero.NewModuleConfig().WithName(""))
	if !errors.Is(err, errPanic) {
		t.Errorf("instantiate: %v, want %v", err, errPanic)
	}
}

// TestReadOnlyPreopenRefusesEveryOpenThatWrites: opening for reading with
// O_TRUNC, O_CREAT or O_APPEND writes too. wazero's ReadFS refused only
// O_WRONLY and O_RDWR, so O_RDONLY|O_TRUNC emptied a file of a read-only
// preopen and O_RDONLY|O_CREAT made new ones (red team).
func TestReadOnlyPreopenRefusesEveryOpenThatWrites(t *testing.T) {
	m := probe(t)
	granted, _ := world(t)
	cfg := Config{Dirs: []Dir{{Host: granted, Guest: granted, ReadOnly: true}}}
	file, created := filepath.Join(granted, "file.txt"), filepath.Join(granted, "new.txt")
	for _, flags := range [][]string{
		{file, "rdonly", "trunc"},
		{file, "rdonly", "append"},
		{file, "rdonly", "creat"},
		{created, "rdonly", "creat"},
		{created, "rdonly", "creat", "excl"},
		{created, "rdonly", "creat", "trunc"},
		{file, "wronly"},
		{file, "rdwr"},
	} {
		if out, _ := run(t, m, cfg, append([]string{"open"}, flags...)...); !strings.HasPrefix(out, "err") {
			t.Errorf("open %v on a read-only preopen: %q, want refused", flags, out)
		}
	}
	if b, _ := os.ReadFile(file); string(b) != "granted" {
		t.Errorf("file.txt is now %q", b)
	}
	if _, err := os.Lstat(created); err == nil {
		t.Error("a file was created in the read-only preopen")
	}
	if out, _ := run(t, m, cfg, "open", file, "rdonly"); out != "ok\n" {
		t.Errorf("a plain read-only open: %q", out)
	}
}

// grantDirs are g's directories as preopens, as airlock run makes them.
func grantDirs(g *grant.Grant) []Dir {
	var out []Dir
	for _, m := range g.Mounts() {
		if m.Dir {
			out = append(out, Dir{Host: m.Source, Guest: m.Source, ReadOnly: !m.Writable, Grant: g})
		}
	}
	return out
}

// TestGrantRulesHoldWhereverAPathLeads: a directory granted read-only
// inside a read-write one stays read-only however the module's path gets
// there: directly (its own preopen), through a symlink the module plants
// in the read-write part ("l -> sub", the red team's way in), through a
// link to one of its files, by a hard link, or by moving it away; a
// denied path stays absent through a link; and what the grant allows
// through such links still works.
func TestGrantRulesHoldWhereverAPathLeads(t *testing.T) {
	m := probe(t)
	P := tempDir(t)
	for _, d := range []string{"sub/w", "secret"} {
		if err := os.MkdirAll(filepath.Join(P, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(P, "sub", "f"), "orig")
	write(t, filepath.Join(P, "secret", "key"), "SECRET")
	g := testGrant(t, P, `
[paths]
read_write = [".", "sub/w"]
read_only = ["sub"]
deny = ["secret"]
`)
	cfg := Config{Dirs: grantDirs(g)}
	j := func(p ...string) string { return filepath.Join(append([]string{P}, p...)...) }
	for _, l := range [][2]string{{"sub", "l"}, {"sub/f", "lf"}, {"sub/new", "dangling"}, {"sub/w", "lw"}, {"secret", "ls"}, {"l", "ll"}} {
		if out, _ := run(t, m, cfg, "symlink", l[0], j(l[1])); out != "ok\n" {
			t.Fatalf("planting %s -> %s: %q", l[1], l[0], out)
		}
	}
	for _, tc := range [][]string{
		{"write", j("sub", "f"), "PWNED"},
		{"write", j("l", "f"), "PWNED"},
		{"write", j("l", "new"), "PWNED"},
		{"write", j("ll", "f"), "PWNED"},
		{"write", j("lf"), "PWNED"},
		{"write", j("dangling"), "PWNED"},
		{"open", j("l", "f"), "rdonly", "trunc"},
		{"open", j("l", "made"), "rdonly", "creat"},
		{"link", j("sub", "f"), j("hard")},
		{"link", j("l", "f"), j("hard")},
		{"rename", j("sub"), j("moved")},
		{"rename", j("l", "f"), j("moved")},
		{"rename", j("sub", "w"), j("moved")},
		{"read", j("ls", "key")},
		{"read", j("secret", "key")},
	} {
		if out, _ := run(t, m, cfg, tc...); !strings.HasPrefix(out, "err") {
			t.Errorf("%v: %q, want refused", tc, out)
		}
	}
	out, _ := run(t, m, cfg, "mutate", j("l"))
	for _, l := range lines(out) {
		if !strings.HasPrefix(l, "err") && l != "ok chmod" {
			t.Errorf("mutate through l -> sub: %q", l)
		}
	}
	if diff := cmp.Diff([]string{"f", "w"}, names(t, j("sub"))); diff != "" {
		t.Errorf("the read-only directory changed (-want +got):\n%s", diff)
	}
	if b, _ := os.ReadFile(j("sub", "f")); string(b) != "orig" {
		t.Errorf("sub/f is %q", b)
	}
	// Allowed: the read-write directory inside the read-only one, also
	// through a link, and the read-write part itself.
	for _, tc := range [][]string{
		{"write", j("sub", "w", "a"), "x"},
		{"write", j("lw", "b"), "x"},
		{"write", j("new.txt"), "x"},
	} {
		if out, _ := run(t, m, cfg, tc...); out != "ok\n" {
			t.Errorf("%v: %q, want allowed", tc, out)
		}
	}
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}
