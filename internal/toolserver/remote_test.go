package toolserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/google/go-cmp/cmp"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/egresstest"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandboxtest"
	"github.com/airlockhq/airlock/internal/toolserver"
	"github.com/airlockhq/airlock/wire"
)

// call is one tool call of a test.
type call struct{ tool, args string }

// everyTool exercises every tool the hands run, successes and model-
// readable failures alike.
var everyTool = []call{
	{"read_file", `{"path":"a.txt"}`},
	{"read_file", `{"path":"a.txt","offset":2,"limit":1}`},
	{"read_file", `{"path":"missing.txt"}`},
	{"read_file", `{"path":"dir"}`},
	{"write_file", `{"path":"dir/new.txt","content":"one\ntwo\nthree\n"}`},
	{"write_file", `{"path":"nodir/x.txt","content":"x"}`},
	{"read_file", `{"path":"dir/new.txt"}`},
	{"edit_file", `{"path":"dir/new.txt","old_string":"two","new_string":"TWO"}`},
	{"edit_file", `{"path":"dir/new.txt","old_string":"absent","new_string":"x"}`},
	{"glob", `{"pattern":"**/*.txt"}`},
	{"glob", `{"pattern":"*.go","path":"dir/sub"}`},
	{"grep", `{"pattern":"beta","ignore_case":true,"output_mode":"content","context":1}`},
	{"grep", `{"pattern":"T.O","output_mode":"count"}`},
	{"grep", `{"pattern":"Beta","glob":"**/*.go"}`},
	{"shell", `{"command":"echo out; echo err >&2; cat dir/new.txt; exit 3"}`},
	{"shell", `{"command":"ls -la dir | wc -l; id -u; echo $HOME $PATH"}`},
	{"shell", `{"command":"kill -9 $$"}`},
	{"write_file", `{"path":"/etc/x","content":"x"}`},
}

// TestLocalAndRemoteAgree runs every tool locally and then on remote hands
// over the same workspace: what the model reads, the outcome class and the
// isolation must be the same, byte for byte.
func TestLocalAndRemoteAgree(t *testing.T) {
	w := newWorkspace(t)
	local := sandboxtest.Native(t)
	run := func(backend sandbox.Backend) []*broker.Result {
		w.reset(t)
		s := w.session(t, backend)
		var out []*broker.Result
		for _, c := range everyTool {
			res, err := s.Call(context.Background(), c.tool, json.RawMessage(c.args))
			if err != nil {
				t.Fatalf("%s %s: %v", c.tool, c.args, err)
			}
			res.CallID = ""
			// What the sandbox measured differs run to run; that it is
			// carried across the link is checked below.
			if cost := res.Output.Meta.Cost; cost != nil && res.Class == "ok" && c.tool != "background_command" {
				if cost.WallSeconds <= 0 || cost.PeakMemory <= 0 {
					t.Errorf("%s %s: cost %+v, want the sandbox's wall time and peak memory", c.tool, c.args, cost)
				}
			}
			if cost := res.Output.Meta.Cost; cost != nil {
				cost.CPUSeconds, cost.PeakMemory, cost.WallSeconds = 0, 0, 0
			}
			out = append(out, res)
		}
		return out
	}
	want := run(local)
	srv, url := inProcess(t, w)
	got := run(remote(t, url, local))
	for i := range want {
		if diff := cmp.Diff(want[i], got[i]); diff != "" {
			t.Errorf("%s %s: local and remote differ (-local +remote):\n%s", everyTool[i].tool, everyTool[i].args, diff)
		}
	}
	if srv.Runs() == 0 {
		t.Fatal("nothing ran on the hands")
	}
}

// TestRemoteRecordsTheHands checks that the broker's audit record of a
// remote call names the endpoint and the hands.
func TestRemoteRecordsTheHands(t *testing.T) {
	w := newWorkspace(t)
	srv, url := inProcess(t, w)
	s := w.session(t, remote(t, url, nil))
	res, err := s.Call(context.Background(), "read_file", json.RawMessage(`{"path":"a.txt"}`))
	if err != nil || res.Class != broker.ClassOK {
		t.Fatalf("read_file: %v %+v", err, res)
	}
	b, err := os.ReadFile(filepath.Join(s.Dir(), "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`"remote":%q`, url+" "+srv.Identity())
	if !bytes.Contains(b, []byte(want)) {
		t.Fatalf("audit records lack %s:\n%s", want, b)
	}
}

// TestSecretsStayLocal: a call that carries a secret runs on the broker's
// local backend and never reaches the hands.
func TestSecretsStayLocal(t *testing.T) {
	w := newWorkspace(t)
	srv, url := inProcess(t, w)
	local := &recording{}
	b := remote(t, url, local)
	in := wire.ToolInput{Tool: "http_fetch", Args: json.RawMessage(`{"url":"https://example.test/"}`),
		Context: wire.CallContext{CallID: "call_secret", Secrets: map[string]string{"tok": "s3cret"}, Cwd: w.root}}
	spec := broker.SpecFor(w.grant, w.grant.LimitsFor("http_fetch"))
	spec.Stdin = frameOf(t, &in)
	if _, err := b.Run(context.Background(), spec); err != nil {
		t.Fatal(err)
	}
	if local.n.Load() != 1 {
		t.Fatalf("local backend ran %d calls, want 1", local.n.Load())
	}
	if srv.Runs() != 0 {
		t.Fatalf("the hands ran %d calls carrying a secret", srv.Runs())
	}
	// Without a local backend, such a call is refused, not sent.
	b2 := remote(t, url, nil)
	spec.Stdin = frameOf(t, &in)
	if _, err := b2.Run(context.Background(), spec); err == nil || !strings.Contains(err.Error(), "secret") {
		t.Fatalf("a secret call without a local backend: %v", err)
	}
	if srv.Runs() != 0 {
		t.Fatalf("the hands ran %d calls carrying a secret", srv.Runs())
	}
}

// recording is a local backend that counts what it was asked to run.
type recording struct{ n atomic.Int64 }

func (r *recording) Run(ctx context.Context, spec *sandbox.Spec) (*sandbox.Result, error) {
	r.n.Add(1)
	out := wire.ToolOutput{Content: "fetched locally"}
	b, _ := json.Marshal(out)
	if spec.Stdout != nil {
		_ = wire.WriteFrame(spec.Stdout, b)
	}
	return &sandbox.Result{}, nil
}
func (r *recording) Report() sandbox.Report { return sandbox.Report{Backend: "recording"} }

func frameOf(t *testing.T, in *wire.ToolInput) *bytes.Buffer {
	t.Helper()
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := wire.WriteFrame(&buf, b); err != nil {
		t.Fatal(err)
	}
	return &buf
}

// TestToken: a wrong or missing token is refused at connect, clearly.
func TestToken(t *testing.T) {
	w := newWorkspace(t)
	_, url := inProcess(t, w)
	for _, tok := range []string{"wrong-token-wrong-token", ""} {
		_, err := toolserver.New(context.Background(), &toolserver.Options{Endpoint: url, Token: tok})
		if err == nil {
			t.Fatalf("token %q: connected", tok)
		}
		if tok != "" && !strings.Contains(err.Error(), "refused the token") || tok == "" && !strings.Contains(err.Error(), "token") {
			t.Errorf("token %q: error %q does not say the token was wrong", tok, err)
		}
	}
}

// TestManyCallsOneConnection: 50 concurrent calls share one connection
// and each gets its own answer.
func TestManyCallsOneConnection(t *testing.T) {
	w := newWorkspace(t)
	_, url := serveWith(t, &toolserver.ServerOptions{Grant: w.grant, MaxSandboxes: 50})
	p := newFrameProxy(t, url)
	for i := range 50 {
		if err := os.WriteFile(filepath.Join(w.root, fmt.Sprintf("f%d.txt", i)), []byte(fmt.Sprintf("file %d\n", i)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// 50 sandboxes at once keep a 2-core machine busy: the hands get 15 s
	// of silence before the link counts as lost, so only a real loss does.
	s, err := broker.Open(&broker.Options{Grant: w.grant, Backend: remoteBeating(t, p.url, nil, 5*time.Second), RecordsDir: w.records, MaxConcurrent: 50})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := s.Call(context.Background(), "read_file", json.RawMessage(fmt.Sprintf(`{"path":"f%d.txt"}`, i)))
			if err != nil {
				t.Error(err)
				return
			}
			if !strings.HasSuffix(res.Output.Content, fmt.Sprintf("\nfile %d\n", i)) {
				t.Errorf("call %d got %q", i, res.Output.Content)
			}
		}()
	}
	wg.Wait()
	if n := p.conns.Load(); n != 1 {
		t.Fatalf("%d connections, want 1", n)
	}
}

// TestDuplicatedAndReorderedFrames: a proxy that sends every frame twice
// and swaps neighbouring frames towards the broker; every call is answered
// once, correctly, and ran once.
func TestDuplicatedAndReorderedFrames(t *testing.T) {
	w := newWorkspace(t)
	srv, url := inProcess(t, w)
	p := newFrameProxy(t, url)
	var mu sync.Mutex
	var held []byte
	p.setHook(func(toBroker bool, f *toolserver.Frame, b []byte, send func([]byte)) {
		if f.Type == toolserver.TypeHeartbeat || f.Type == toolserver.TypeControl {
			send(b)
			return
		}
		if !toBroker {
			send(b)
			send(b) // every call (and input) twice
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if held == nil {
			held = b // wait for the next frame, then send both, swapped
			go func() {
				time.Sleep(50 * time.Millisecond)
				mu.Lock()
				defer mu.Unlock()
				if held != nil {
					send(held)
					send(held)
					held = nil
				}
			}()
			return
		}
		send(b)
		send(held)
		send(b)
		send(held)
		held = nil
	})
	s, err := broker.Open(&broker.Options{Grant: w.grant, Backend: remote(t, p.url, nil), RecordsDir: w.records, MaxConcurrent: 20})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := fmt.Sprintf(`{"command":"echo run >> runs%d.log; echo call %d"}`, i, i)
			res, err := s.Call(context.Background(), "shell", json.RawMessage(cmd))
			if err != nil {
				t.Error(err)
				return
			}
			if !strings.Contains(res.Output.Content, fmt.Sprintf("\ncall %d\n[exit 0]", i)) {
				t.Errorf("call %d got %q", i, res.Output.Content)
			}
		}()
	}
	wg.Wait()
	for i := range 20 {
		b, _ := os.ReadFile(filepath.Join(w.root, fmt.Sprintf("runs%d.log", i)))
		if string(b) != "run\n" {
			t.Errorf("call %d ran %d times", i, strings.Count(string(b), "run"))
		}
	}
	if srv.Runs() != 20 {
		t.Errorf("the hands ran %d sandboxes for 20 calls", srv.Runs())
	}
}

// TestSilentHands: hands that stop answering (heartbeats included) while
// the connection stays open are taken for dead within a few heartbeats: a
// shell call in flight gets the outcome-unknown sentence.
func TestSilentHands(t *testing.T) {
	w := newWorkspace(t)
	_, url := inProcess(t, w)
	p := newFrameProxy(t, url)
	var silent atomic.Bool
	p.setHook(func(toBroker bool, f *toolserver.Frame, b []byte, send func([]byte)) {
		if toBroker && silent.Load() {
			return
		}
		send(b)
		if !toBroker && f.Type == toolserver.TypeCall {
			silent.Store(true) // from now on, the hands say nothing
		}
	})
	s := w.session(t, remote(t, p.url, nil))
	res, err := s.Call(context.Background(), "shell", json.RawMessage(`{"command":"echo hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	if res.Class != broker.ClassLost || !strings.Contains(res.Output.Content, broker.SentenceLost) {
		t.Fatalf("got %s %q, want the outcome-unknown sentence", res.Class, res.Output.Content)
	}
}

// TestCancelKillsRemoteSandbox: cancelling a call kills its sandbox on the
// hands before Run returns; closing a session ends its remote background
// work.
func TestCancelKillsRemoteSandbox(t *testing.T) {
	w := newWorkspace(t)
	srv, url := inProcess(t, w)
	// A cancel waits for the hands' word for DeadAfter heartbeats; tearing
	// a sandbox down on a loaded machine can take longer than the quick
	// test interval's 600 ms, and liveness is not this test's point.
	s := w.session(t, remoteBeating(t, url, nil, 5*time.Second))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan *broker.Result)
	go func() {
		res, _ := s.Call(ctx, "shell", json.RawMessage(`{"command":"touch started; sleep 600"}`))
		done <- res
	}()
	waitFor(t, "the command to start", func() bool { _, err := os.Stat(filepath.Join(w.root, "started")); return err == nil })
	cancel()
	res := <-done
	if res.Class != broker.ClassCancelled {
		t.Fatalf("class %s, want cancelled", res.Class)
	}
	waitFor(t, "the remote sandbox to go", func() bool { return srv.Running() == 0 })

	res, err := s.Call(context.Background(), "shell", json.RawMessage(`{"command":"touch bg; sleep 600","run_in_background":true}`))
	if err != nil || res.Output.Meta.WorkID == "" {
		t.Fatalf("background start: %v %+v", err, res)
	}
	waitFor(t, "the background command to start", func() bool { _, err := os.Stat(filepath.Join(w.root, "bg")); return err == nil })
	if srv.Running() != 1 {
		t.Fatalf("%d sandboxes running on the hands, want 1", srv.Running())
	}
	s.Close()
	if n := srv.Running(); n != 0 {
		t.Fatalf("%d sandboxes still running on the hands after the session closed", n)
	}
}

// TestCallWaitingForHandsKeepsItsDeadline: with the hands gone for good, a
// call waits for a reconnect only as long as its own context.
func TestCallWaitingForHandsKeepsItsDeadline(t *testing.T) {
	w := newWorkspace(t)
	lp := listenPort(t)
	addr := lp.addr
	c := startChild(t, lp, w.root)
	s := w.session(t, remote(t, "ws://"+addr, nil))
	c.kill()
	lp.ln.Close() // gone for good: connections are refused
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	res, err := s.Call(ctx, "read_file", json.RawMessage(`{"path":"a.txt"}`))
	if err != nil {
		t.Fatal(err)
	}
	if res.Class != broker.ClassCancelled {
		t.Fatalf("class %s (%q), want cancelled", res.Class, res.Output.Content)
	}
}

// holdResults returns a hook that passes everything but holds the result
// of the first call to the tool, announcing it on held.
func holdResults(toolName string, held chan<- string) func(bool, *toolserver.Frame, []byte, func([]byte)) {
	var mu sync.Mutex
	ids := map[string]bool{}
	return func(toBroker bool, f *toolserver.Frame, b []byte, send func([]byte)) {
		mu.Lock()
		defer mu.Unlock()
		if !toBroker && f.Type == toolserver.TypeCall && f.Call.Input != nil && f.Call.Input.Tool == toolName && len(ids) == 0 {
			ids[f.ID] = true
		}
		if toBroker && f.Type == toolserver.TypeResult && ids[f.ID] {
			delete(ids, f.ID)
			ids["done"] = true
			held <- f.ID
			return // never delivered
		}
		send(b)
	}
}

// TestKillDuringIdempotentCall: the hands are killed (SIGKILL) after
// running a read_file whose result never reached the broker; the broker
// reconnects to the hands restarted on the same address and the call is
// retried there, transparently, with the right answer.
func TestKillDuringIdempotentCall(t *testing.T) {
	w := newWorkspace(t)
	lp := listenPort(t)
	addr := lp.addr
	c := startChild(t, lp, w.root)
	p := newFrameProxy(t, "ws://"+addr)
	held := make(chan string, 1)
	p.setHook(holdResults("read_file", held))
	s := w.session(t, remote(t, p.url, nil))
	done := make(chan *broker.Result)
	go func() {
		res, err := s.Call(context.Background(), "read_file", json.RawMessage(`{"path":"a.txt"}`))
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	<-held
	c.kill()
	startChild(t, lp, w.root)
	res := <-done
	if res.Class != broker.ClassOK || !strings.HasSuffix(res.Output.Content, "\nalpha\nbeta\ngamma\n") {
		t.Fatalf("got %s %q, want the file", res.Class, res.Output.Content)
	}
}

// TestKillDuringWrite: the hands are killed during a write_file (its
// result held) and during a running shell command; each gets the
// outcome-unknown sentence, neither runs again on the restarted hands, and
// the session goes on.
func TestKillDuringWrite(t *testing.T) {
	for _, tc := range []struct {
		tool, args string
	}{
		{"write_file", `{"path":"w.txt","content":"written\n"}`},
		{"shell", `{"command":"echo run >> runs.log; sleep 600"}`},
	} {
		t.Run(tc.tool, func(t *testing.T) {
			w := newWorkspace(t)
			lp := listenPort(t)
			addr := lp.addr
			c := startChild(t, lp, w.root)
			p := newFrameProxy(t, "ws://"+addr)
			var calls atomic.Int64
			held := make(chan string, 1)
			hold := holdResults(tc.tool, held)
			p.setHook(func(toBroker bool, f *toolserver.Frame, b []byte, send func([]byte)) {
				if !toBroker && f.Type == toolserver.TypeCall && f.Call.Input != nil && f.Call.Input.Tool == tc.tool {
					calls.Add(1)
				}
				hold(toBroker, f, b, send)
			})
			s := w.session(t, remote(t, p.url, nil))
			done := make(chan *broker.Result)
			go func() {
				res, err := s.Call(context.Background(), tc.tool, json.RawMessage(tc.args))
				if err != nil {
					t.Error(err)
				}
				done <- res
			}()
			if tc.tool == "shell" {
				// (The log exists once the shell opened it, a moment before
				// its line is written.)
				waitFor(t, "the command to run", func() bool {
					b, _ := os.ReadFile(filepath.Join(w.root, "runs.log"))
					return strings.Contains(string(b), "run\n")
				})
			} else {
				<-held
			}
			c.kill()
			startChild(t, lp, w.root)
			res := <-done
			if res.Class != broker.ClassLost || !strings.Contains(res.Output.Content, broker.SentenceLost) {
				t.Fatalf("got %s %q, want the outcome-unknown sentence", res.Class, res.Output.Content)
			}
			// The session goes on, on the new hands.
			res2, err := s.Call(context.Background(), "read_file", json.RawMessage(`{"path":"a.txt"}`))
			if err != nil || res2.Class != broker.ClassOK {
				t.Fatalf("after the crash: %v %+v", err, res2)
			}
			if n := calls.Load(); n != 1 {
				t.Fatalf("the %s call was sent %d times", tc.tool, n)
			}
			if tc.tool == "shell" {
				b, _ := os.ReadFile(filepath.Join(w.root, "runs.log"))
				if string(b) != "run\n" {
					t.Fatalf("the command ran %d times", strings.Count(string(b), "run"))
				}
			}
			b, _ := os.ReadFile(filepath.Join(s.Dir(), "audit.jsonl"))
			if !bytes.Contains(b, []byte(`"class":"lost"`)) {
				t.Fatalf("no lost record in the audit log:\n%s", b)
			}
		})
	}
}

// TestBackgroundWorkLost: background work on hands that were rebuilt is
// reported as lost, with its work id.
func TestBackgroundWorkLost(t *testing.T) {
	w := newWorkspace(t)
	lp := listenPort(t)
	addr := lp.addr
	c := startChild(t, lp, w.root)
	s := w.session(t, remote(t, "ws://"+addr, nil))
	res, err := s.Call(context.Background(), "shell", json.RawMessage(`{"command":"touch bg; sleep 600","run_in_background":true}`))
	if err != nil || res.Output.Meta.WorkID == "" {
		t.Fatalf("background start: %v %+v", err, res)
	}
	id := res.Output.Meta.WorkID
	waitFor(t, "the background command to start", func() bool { _, err := os.Stat(filepath.Join(w.root, "bg")); return err == nil })
	c.kill()
	startChild(t, lp, w.root)
	res, err = s.Call(context.Background(), "background_command", json.RawMessage(fmt.Sprintf(`{"operation":"wait","work_id":%q}`, id)))
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("work %s: lost: background work %s was lost", id, id)
	if !strings.Contains(res.Output.Content, want) {
		t.Fatalf("status %q lacks %q", res.Output.Content, want)
	}
}

// TestRefusedByHandsGrant: a broker cannot widen the hands' grant.
func TestRefusedByHandsGrant(t *testing.T) {
	w := newWorkspace(t)
	narrow := newWorkspace(t) // the hands grant another directory only
	srv, err := toolserver.NewServer(&toolserver.ServerOptions{Grant: narrow.grant, Backend: sandboxtest.Native(t)})
	if err != nil {
		t.Fatal(err)
	}
	_ = srv
	_, url := inProcess(t, narrow)
	s := w.session(t, remote(t, url, nil))
	res, err := s.Call(context.Background(), "read_file", json.RawMessage(`{"path":"a.txt"}`))
	if err != nil {
		t.Fatal(err)
	}
	if res.Class != broker.ClassSandbox {
		t.Fatalf("class %s %q: the hands ran a call outside their grant", res.Class, res.Output.Content)
	}
	b, _ := os.ReadFile(filepath.Join(s.Dir(), "audit.jsonl"))
	if !bytes.Contains(b, []byte("hands' grant")) {
		t.Fatalf("the record does not say the hands' grant refused it:\n%s", b)
	}
}

// TestRemoteCommand: a command (airlock exec, background work) runs on the
// hands with its stdin, stdout, stderr and exit status relayed, and a stop
// reaches its processes.
func TestRemoteCommand(t *testing.T) {
	w := newWorkspace(t)
	_, url := inProcess(t, w)
	b := remote(t, url, nil)
	spec := broker.SpecFor(w.grant, w.grant.LimitsFor("shell"))
	spec.Command = []string{"/bin/sh", "-c", "cat; echo err >&2; exit 7"}
	var stdout, stderr bytes.Buffer
	spec.Stdin = strings.NewReader(strings.Repeat("in\n", 20000))
	spec.Stdout, spec.Stderr = &stdout, &stderr
	res, err := b.Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != 7 || stdout.String() != strings.Repeat("in\n", 20000) || stderr.String() != "err\n" {
		t.Fatalf("exit %d, stdout %d bytes, stderr %q", res.ExitCode, stdout.Len(), stderr.String())
	}

	spec = broker.SpecFor(w.grant, w.grant.LimitsFor("shell"))
	spec.Command = []string{"/bin/sh", "-c", "trap 'echo stopped; exit 3' TERM; touch up; while :; do sleep 0.05; done"}
	stdout.Reset()
	spec.Stdout = &stdout
	stop := make(chan struct{})
	spec.Stop = stop
	done := make(chan *sandbox.Result)
	go func() {
		res, err := b.Run(context.Background(), spec)
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	waitFor(t, "the command to start", func() bool { _, err := os.Stat(filepath.Join(w.root, "up")); return err == nil })
	close(stop)
	res = <-done
	if res == nil || res.ExitCode != 3 || stdout.String() != "stopped\n" {
		t.Fatalf("after stop: %+v, stdout %q", res, stdout.String())
	}
}

// TestRemoteEgress: an http_fetch and a shell command that reach the
// network run on the hands through the hands' own egress proxy: the model
// reads what a local call reads, and the broker's audit log holds the
// hands' egress decisions.
func TestRemoteEgress(t *testing.T) {
	fx := egresstest.Serve(t, nil, "fixture.test", nil)
	w := newWorkspace(t)
	port := strconv.Itoa(fx.Port)
	g, err := grant.Parse([]byte(`[paths]
read_write = ["`+w.root+`"]
[network]
private = ["127.0.0.1:`+port+`"]
plain_http = ["127.0.0.1:`+port+`"]
`), "net.toml", w.root)
	if err != nil {
		t.Fatal(err)
	}
	w.grant = g
	calls := []call{
		{"http_fetch", `{"url":"http://127.0.0.1:` + port + `/"}`},
		{"shell", `{"command":"curl -sS http://127.0.0.1:` + port + `/"}`},
	}
	run := func(backend sandbox.Backend) ([]string, []byte) {
		s := w.session(t, backend)
		var out []string
		for _, c := range calls {
			res, err := s.Call(context.Background(), c.tool, json.RawMessage(c.args))
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, string(res.Class)+" "+res.Output.Content)
		}
		b, _ := os.ReadFile(filepath.Join(s.Dir(), "audit.jsonl"))
		return out, b
	}
	want, _ := run(sandboxtest.Native(t))
	srv, url := inProcess(t, w)
	got, audit := run(remote(t, url, nil))
	for _, o := range want {
		if !strings.HasPrefix(o, "ok ") || !strings.Contains(o, "404 page not found") {
			t.Errorf("the local call did not reach the fixture: %q", o)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("local and remote differ (-local +remote):\n%s", diff)
	}
	if srv.Runs() != 2 {
		t.Errorf("the hands ran %d calls, want 2", srv.Runs())
	}
	if n := bytes.Count(audit, []byte(`"kind":"egress"`)); n < 2 {
		t.Errorf("%d egress records in the broker's log, want the hands' decisions:\n%s", n, audit)
	}
}

// TestRetryAnsweredFromRecord: the link drops (the hands live on) after
// the hands ran a read_file but before its result got through; the broker
// reconnects and asks again under the same id, and the hands answer from
// their record instead of running it again.
func TestRetryAnsweredFromRecord(t *testing.T) {
	w := newWorkspace(t)
	srv, url := inProcess(t, w)
	p := newFrameProxy(t, url)
	held := make(chan string, 1)
	p.setHook(holdResults("read_file", held))
	s := w.session(t, remote(t, p.url, nil))
	done := make(chan *broker.Result)
	go func() {
		res, err := s.Call(context.Background(), "read_file", json.RawMessage(`{"path":"a.txt"}`))
		if err != nil {
			t.Error(err)
		}
		done <- res
	}()
	<-held
	p.cut()
	res := <-done
	if res.Class != broker.ClassOK || !strings.HasSuffix(res.Output.Content, "\nalpha\nbeta\ngamma\n") {
		t.Fatalf("got %s %q", res.Class, res.Output.Content)
	}
	if n := srv.Runs(); n != 1 {
		t.Fatalf("the hands ran the call %d times, want once", n)
	}
	if n := p.conns.Load(); n != 2 {
		t.Fatalf("%d connections, want 2 (one reconnect)", n)
	}
}

// TestNoCommonVersion: a broker that speaks only another protocol version
// is refused with a frame naming both sides' versions.
func TestNoCommonVersion(t *testing.T) {
	w := newWorkspace(t)
	_, url := inProcess(t, w)
	c, _, err := websocket.Dial(context.Background(), url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + testToken}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	hello, _ := toolserver.EncodeFrame(&toolserver.Frame{Type: toolserver.TypeControl, Control: &toolserver.Control{Op: toolserver.OpHello, Versions: []int{99}}})
	if err := c.Write(context.Background(), websocket.MessageBinary, hello); err != nil {
		t.Fatal(err)
	}
	_, b, err := c.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	f, err := toolserver.DecodeFrame(b)
	if err != nil || f.Control == nil || f.Control.Op != toolserver.OpError || !strings.Contains(f.Control.Message, "the broker speaks [99], these hands speak 1") {
		t.Fatalf("answer %s, %v", b, err)
	}
}

// TestLargeCall: a call near the broker's cap on arguments (16 MiB) goes
// through as one frame each way. It runs with the default heartbeat: on a
// loaded machine (or under -race) moving and decoding 15 MiB several times
// over takes longer than the quick heartbeats of the other tests allow.
func TestLargeCall(t *testing.T) {
	w := newWorkspace(t)
	srv, err := toolserver.NewServer(&toolserver.ServerOptions{Grant: w.grant, Backend: sandboxtest.Native(t)})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv.Handler(testToken)}
	go hs.Serve(ln)
	defer hs.Close()
	b, err := toolserver.New(context.Background(), &toolserver.Options{Endpoint: "ws://" + ln.Addr().String(), Token: testToken})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	s := w.session(t, b)
	content := strings.Repeat("0123456789abcde\n", 15<<16) // 15 MiB
	args, _ := json.Marshal(map[string]string{"path": "big.txt", "content": content})
	res, err := s.Call(context.Background(), "write_file", args)
	if err != nil || res.Class != broker.ClassOK {
		t.Fatalf("write_file: %v %+v", err, res)
	}
	got, err := os.ReadFile(filepath.Join(w.root, "big.txt"))
	if err != nil || string(got) != content {
		t.Fatalf("big.txt: %d bytes, %v", len(got), err)
	}
}
