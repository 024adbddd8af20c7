package broker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandboxtest"
	"github.com/airlockhq/airlock/wire"
)

func TestMain(m *testing.M) { sandboxtest.Main(m) }

// fixture is a workspace, a grant over it and a records directory.
type fixture struct {
	ws, records string
	grant       *grant.Grant
}

func newFixture(t *testing.T, limits grant.Limits) *fixture {
	t.Helper()
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "hello.txt"), []byte("hello, sandbox\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := grant.FromFlags(ws, grant.Flags{Limits: limits})
	if err != nil {
		t.Fatalf("grant.FromFlags: %v", err)
	}
	return &fixture{ws: ws, records: t.TempDir(), grant: g}
}

func (f *fixture) open(t *testing.T, b sandbox.Backend, mut func(*broker.Options)) *broker.Session {
	t.Helper()
	opts := &broker.Options{Grant: f.grant, Backend: b, RecordsDir: f.records}
	if mut != nil {
		mut(opts)
	}
	s, err := broker.Open(opts)
	if err != nil {
		t.Fatalf("broker.Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func records(t *testing.T, dir string) []audit.Record {
	t.Helper()
	recs, _, err := audit.ReadAll(dir, "")
	if err != nil {
		t.Fatalf("reading records: %v", err)
	}
	return recs
}

func calls(recs []audit.Record) []audit.Record {
	var out []audit.Record
	for _, r := range recs {
		if r.Kind == audit.KindCall {
			out = append(out, r)
		}
	}
	return out
}

func call(t *testing.T, s *broker.Session, name, args string) *broker.Result {
	t.Helper()
	res, err := s.Call(context.Background(), name, json.RawMessage(args))
	if err != nil {
		t.Fatalf("Call(%s, %s): %v", name, args, err)
	}
	return res
}

func TestCallRunsInSandboxAndIsAudited(t *testing.T) {
	f := newFixture(t, grant.Limits{})
	s := f.open(t, sandboxtest.Native(t), nil)
	res := call(t, s, "read_file", `{"path":"hello.txt"}`)
	if res.Class != broker.ClassOK || res.Output.IsError {
		t.Fatalf("read_file: class %s, output %+v", res.Class, res.Output)
	}
	if !strings.HasPrefix(res.Output.Content, "[airlock: read_file · linux sandbox · grant from flags]\n") {
		t.Errorf("content is not labelled: %q", res.Output.Content)
	}
	if !strings.HasSuffix(res.Output.Content, "hello, sandbox\n") {
		t.Errorf("content lost the file: %q", res.Output.Content)
	}
	iso := res.Output.Meta.Isolation
	if iso == nil || iso.Backend != "linux" || !contains(iso.Features, "seccomp") || !contains(iso.Features, "userns") {
		t.Errorf("isolation report = %+v, want linux with userns and seccomp", iso)
	}
	recs := calls(records(t, f.records))
	if len(recs) != 1 {
		t.Fatalf("got %d call records, want 1", len(recs))
	}
	r := recs[0]
	if r.CallID != res.CallID || r.Tool != "read_file" || r.Decision != "allowed" || r.Class != "ok" || r.Backend != "linux" || r.Limits == nil {
		t.Errorf("record = %+v", r)
	}
}

func TestRefusalsNeverRun(t *testing.T) {
	f := newFixture(t, grant.Limits{})
	s := f.open(t, sandboxtest.Native(t), nil)
	tests := []struct {
		name, tool, args, want string
	}{
		{"outside the grant", "read_file", `{"path":"/etc/passwd"}`, "outside every granted path"},
		{"traversal", "read_file", `{"path":"../../../../etc/shadow"}`, "outside every granted path"},
		{"prefix confusion", "read_file", fmt.Sprintf(`{"path":%q}`, f.ws+"-evil/x"), "outside every granted path"},
		{"protected path", "write_file", `{"path":".git/hooks/pre-commit","content":"x"}`, "protected"},
		{"unknown tool", "rm_rf", `{}`, `unknown tool "rm_rf"`},
		{"unknown field", "read_file", `{"path":"a","bogus":1}`, `"bogus"`},
		{"case-only key", "read_file", `{"Path":"a"}`, `"Path"`},
		{"cwd outside", "shell", `{"command":"true","cwd":"/etc"}`, "outside every granted path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, s, tt.tool, tt.args)
			if !res.Refused() || !res.Output.IsError {
				t.Fatalf("call was not refused: %+v", res)
			}
			if !strings.Contains(res.Output.Content, tt.want) || !strings.Contains(res.Output.Content, "refused by grant") {
				t.Fatalf("refusal %q does not say %q", res.Output.Content, tt.want)
			}
		})
	}
	for _, r := range calls(records(t, f.records)) {
		if r.Decision != "refused" || r.Reason == "" || r.Backend != "" {
			t.Errorf("record of a refused call = %+v (want refused, a reason, no backend)", r)
		}
	}
}

func TestLimitsAreNamed(t *testing.T) {
	tests := []struct {
		name, command string
		limits        grant.Limits
		class         wire.Class
		sentence      string
	}{
		{"time", "sleep 30", grant.Limits{Time: 1 * time.Second, Memory: 64 << 20, Processes: 32}, broker.ClassTimeout, broker.SentenceTimeout},
		// A time limit far above what filling the memory takes, even on a
		// loaded machine: the memory limit must be the one that ends it.
		{"memory", "head -c 200m /dev/zero >/dev/shm/x; head -c 200m /dev/zero >/tmp/y; sleep 987720", grant.Limits{Time: 120 * time.Second, Memory: 64 << 20, Processes: 32}, broker.ClassMemory, broker.SentenceMemory},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, tt.limits)
			s := f.open(t, sandboxtest.Native(t), nil)
			res := call(t, s, "shell", fmt.Sprintf(`{"command":%q}`, tt.command))
			if res.Class != tt.class || !strings.Contains(res.Output.Content, tt.sentence) || !res.Output.IsError {
				t.Fatalf("class %s, output %q; want %s with %q", res.Class, res.Output.Content, tt.class, tt.sentence)
			}
		})
	}
}

// TestLimitsHitAreNamed: the label names every limit a call hit, and only
// those: a process limit that refused forks while the command went on to
// finish (the call is ok, its output intact), and a time-out that also hit
// the process limit.
func TestLimitsHitAreNamed(t *testing.T) {
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3 on this host (a test dependency, not a kernel feature)")
	}
	f := newFixture(t, grant.Limits{Time: 3 * time.Second, Processes: 32})
	s := f.open(t, sandboxtest.Native(t), nil)
	const forks = `python3 -c '
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
	tests := []struct {
		name, command string
		class         wire.Class
		header        string
	}{
		{"contained fork loop", forks + "; echo finished", broker.ClassOK, " · limit hit: processes]\n"},
		{"fork loop past the time limit", forks + "; sleep 30", broker.ClassTimeout, " · limits hit: time, processes] " + broker.SentenceTimeout},
		{"nothing hit", "echo finished", broker.ClassOK, " · grant from flags]\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, s, "shell", fmt.Sprintf(`{"command":%q}`, tt.command))
			if res.Class != tt.class || !strings.Contains(res.Output.Content, tt.header) {
				t.Fatalf("class %s, output %q; want %s with %q", res.Class, res.Output.Content, tt.class, tt.header)
			}
			if tt.class == broker.ClassOK && !strings.Contains(res.Output.Content, "finished") {
				t.Errorf("the command's output is missing: %q", res.Output.Content)
			}
		})
	}
}

func TestConcurrentCallsAllAudited(t *testing.T) {
	f := newFixture(t, grant.Limits{})
	s := f.open(t, sandboxtest.Native(t), func(o *broker.Options) { o.MaxConcurrent = 16; o.MaxQueue = 200 })
	n := 200
	if testing.Short() {
		n = 40
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	sem := make(chan struct{}, 16)
	for i := 0; i < n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func(i int) {
			defer wg.Done()
			defer func() { <-sem }()
			name, args := "read_file", `{"path":"hello.txt"}`
			if i%4 == 0 {
				name, args = "shell", fmt.Sprintf(`{"command":"echo call %d"}`, i)
			}
			res, err := s.Call(context.Background(), name, json.RawMessage(args))
			if err != nil {
				errs <- err
				return
			}
			if res.Class != broker.ClassOK {
				errs <- fmt.Errorf("call %d: class %s: %s", i, res.Class, res.Output.Content)
				return
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	recs := calls(records(t, f.records))
	for _, r := range recs {
		if r.Class != broker.ClassOK {
			t.Errorf("record %s: class %s: %s", r.CallID, r.Class, r.Detail)
		}
	}
	if len(recs) != n {
		t.Fatalf("%d calls, %d records", n, len(recs))
	}
	// The placeholders that kept missing protected paths uncreatable are
	// gone once the session (whose warm sandboxes hold them) is closed.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if entries, err := os.ReadDir(f.ws); err != nil || len(entries) != 1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("workspace after the calls holds %v (err %v), want only hello.txt", names, err)
	}
	seen := map[string]bool{}
	for _, r := range recs {
		if seen[r.CallID] {
			t.Errorf("call id %s recorded twice", r.CallID)
		}
		seen[r.CallID] = true
	}
}

func TestAdmissionRefusesFastBeyondTheQueue(t *testing.T) {
	f := newFixture(t, grant.Limits{})
	s := f.open(t, sandboxtest.Unsandboxed(t), func(o *broker.Options) {
		o.MaxConcurrent, o.MaxQueue, o.ToolRoot = 1, 1, f.ws
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ { // one running, one queued
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.Call(ctx, "shell", json.RawMessage(`{"command":"sleep 20"}`))
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		running, waiting := s.Stats()
		if running == 1 && waiting == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stats never reached 1 running + 1 waiting: %d, %d", running, waiting)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The third call is refused while the first two still hold the slot
	// and the queue (they end only at cancel below): it did not wait.
	res := call(t, s, "read_file", `{"path":"hello.txt"}`)
	if !res.Refused() || !strings.Contains(res.Output.Content, "airlock is busy") {
		t.Fatalf("third call: %+v", res.Output)
	}
	cancel()
	wg.Wait()
}

func TestCancelKillsTheSandbox(t *testing.T) {
	f := newFixture(t, grant.Limits{})
	s := f.open(t, sandboxtest.Native(t), nil)
	marker := fmt.Sprintf("sleep %d", 600+time.Now().UnixNano()%300)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, err := s.Call(ctx, "shell", json.RawMessage(fmt.Sprintf(`{"command":%q}`, marker)))
	if err != nil {
		t.Fatal(err)
	}
	if res.Class != broker.ClassCancelled {
		t.Fatalf("class %s: %s", res.Class, res.Output.Content)
	}
	// The call ended on the cancel, not with its 600+ s command (a minute
	// no loaded machine misses, and far from 600 s).
	if d := time.Since(start); d > time.Minute {
		t.Fatalf("cancel took %v", d)
	}
	if pids := processesMatching(t, marker); len(pids) > 0 {
		t.Fatalf("processes left after cancel: %v", pids)
	}
}

func TestAuditFailureFailsClosed(t *testing.T) {
	f := newFixture(t, grant.Limits{})
	s := f.open(t, sandboxtest.Unsandboxed(t), func(o *broker.Options) { o.ToolRoot = f.ws })
	// Point the records file at /dev/full: every write fails with ENOSPC, as
	// on a full disk.
	path := filepath.Join(s.Dir(), audit.FileName)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if err := os.Symlink("/dev/full", path); err != nil {
		t.Fatal(err)
	}
	_, err := broker.Open(&broker.Options{Grant: f.grant, Backend: sandboxtest.Unsandboxed(t), RecordsDir: f.records, ID: filepath.Base(s.Dir())})
	if !errors.Is(err, broker.ErrAudit) {
		t.Fatalf("Open with a full records disk: %v, want ErrAudit", err)
	}
}

func TestCloseEndsCallsInFlight(t *testing.T) {
	f := newFixture(t, grant.Limits{})
	s := f.open(t, sandboxtest.Native(t), nil)
	marker := fmt.Sprintf("sleep %d", 900+time.Now().UnixNano()%90)
	done := make(chan *broker.Result, 1)
	go func() {
		res, _ := s.Call(context.Background(), "shell", json.RawMessage(fmt.Sprintf(`{"command":%q}`, marker)))
		done <- res
	}()
	deadline := time.Now().Add(10 * time.Second)
	for len(processesMatching(t, marker)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the call never started")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	res := <-done
	if res == nil || res.Class != broker.ClassCancelled {
		t.Fatalf("call in flight at Close: %+v", res)
	}
	if pids := processesMatching(t, marker); len(pids) > 0 {
		t.Fatalf("processes left after Close: %v", pids)
	}
	if _, err := s.Call(context.Background(), "read_file", json.RawMessage(`{"path":"hello.txt"}`)); !errors.Is(err, broker.ErrClosed) {
		t.Fatalf("Call after Close: %v, want ErrClosed", err)
	}
	recs := records(t, f.records)
	if last := recs[len(recs)-1]; last.Kind != audit.KindSession || last.Decision != "close" {
		t.Fatalf("last record = %+v, want the session close", last)
	}
}

// processesMatching returns the pids of host processes whose command line
// contains s.
func processesMatching(t *testing.T, s string) []string {
	t.Helper()
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		if strings.Contains(strings.ReplaceAll(string(b), "\x00", " "), s) && e.Name() != fmt.Sprint(os.Getpid()) {
			out = append(out, e.Name())
		}
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// mountsBackend records the mounts of each spec it runs, by the tool the
// call's input names.
type mountsBackend struct {
	sandbox.Backend
	mu       sync.Mutex
	writable map[int]bool // calls run, in order: any mount writable
}

func (b *mountsBackend) Run(ctx context.Context, spec *sandbox.Spec) (*sandbox.Result, error) {
	w := false
	for _, m := range spec.Mounts {
		w = w || m.Writable
	}
	b.mu.Lock()
	b.writable[len(b.writable)] = w
	b.mu.Unlock()
	return b.Backend.Run(ctx, spec)
}

// TestReadOnlyToolsGetReadOnlyMounts: a tool that changes nothing runs
// with every mount of a read-write grant read-only (so its sandbox needs
// no placeholders and could not write even if turned); a tool that writes
// keeps the grant's writable mounts.
func TestReadOnlyToolsGetReadOnlyMounts(t *testing.T) {
	f := newFixture(t, grant.Limits{})
	b := &mountsBackend{Backend: sandboxtest.Unsandboxed(t), writable: map[int]bool{}}
	s := f.open(t, b, nil)
	for i, tc := range []struct {
		tool, args string
		writable   bool
	}{
		{"read_file", `{"path":"hello.txt"}`, false},
		{"glob", `{"pattern":"*.txt"}`, false},
		{"grep", `{"pattern":"hello"}`, false},
		{"write_file", `{"path":"new.txt","content":"x"}`, true},
		{"shell", `{"command":"true"}`, true},
	} {
		if res := call(t, s, tc.tool, tc.args); res.Class != broker.ClassOK {
			t.Fatalf("%s: %s %q", tc.tool, res.Class, res.Output.Content)
		}
		b.mu.Lock()
		w, ran := b.writable[i]
		b.mu.Unlock()
		if !ran || w != tc.writable {
			t.Errorf("%s: ran %v, a mount writable %v, want %v", tc.tool, ran, w, tc.writable)
		}
	}
}

// TestReadOnlyToolsSkipOthersPlaceholders: while a shell call holds its
// placeholders (.bashrc, .vscode, ...) in the tree, a read-only tool's
// sandbox, which holds none of its own, still takes them for missing:
// glob does not list them and read_file says they do not exist.
func TestReadOnlyToolsSkipOthersPlaceholders(t *testing.T) {
	f := newFixture(t, grant.Limits{})
	s := f.open(t, sandboxtest.Native(t), nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Call(ctx, "shell", json.RawMessage(`{"command":"touch started; sleep 600"}`))
	}()
	defer func() { cancel(); <-done }()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(f.ws, "started")); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the shell call never started")
		}
	}
	if _, err := os.Lstat(filepath.Join(f.ws, ".bashrc")); err != nil {
		t.Fatalf("the running shell call holds no .bashrc placeholder: %v", err)
	}
	res := call(t, s, "glob", `{"pattern":"*"}`)
	if res.Class != broker.ClassOK || strings.Contains(res.Output.Content, ".bashrc") || strings.Contains(res.Output.Content, ".vscode") || !strings.Contains(res.Output.Content, "hello.txt") {
		t.Errorf("glob beside a running call: %s %q", res.Class, res.Output.Content)
	}
	res = call(t, s, "read_file", `{"path":".bashrc"}`)
	if !res.Output.IsError || !strings.Contains(res.Output.Content, "no such file or directory") {
		t.Errorf("read_file of another call's placeholder: %s %q", res.Class, res.Output.Content)
	}
}

// TestOpenRecordNamesScanRisks: a session over a read-write tree its
// protected-path scan did not see whole says so in its open record, with
// what that leaves unchecked, as well as the grant's other risks.
func TestOpenRecordNamesScanRisks(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	// A repository configuration larger than the scan reads leaves the
	// scan incomplete as cheaply as 20,000 files do.
	for _, d := range []string{".git/objects", ".git/refs"} {
		if err := os.MkdirAll(filepath.Join(ws, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(ws, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, ".git", "config"), []byte(strings.Repeat("#", 2<<20)), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := grant.FromFlags(ws, grant.Flags{WritableProtected: []string{".vscode"}})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{ws: ws, records: t.TempDir(), grant: g}
	s := f.open(t, sandboxtest.Unsandboxed(t), nil)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var open *audit.Record
	for _, r := range records(t, f.records) {
		if r.Kind == audit.KindSession && r.Decision == "open" {
			open = &r
		}
	}
	if open == nil {
		t.Fatal("no open record")
	}
	want := []string{"files past the first 20,000 entries are not checked for protected names or set-ID bits", `paths.writable_protected ".vscode"`}
	for _, w := range want {
		if !slices.ContainsFunc(open.Risks, func(r string) bool { return strings.Contains(r, w) }) {
			t.Errorf("the open record's risks %q lack %q", open.Risks, w)
		}
	}
}
