package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/airlockhq/airlock/internal/sandboxtest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/mcpserver"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/direct"
	"github.com/airlockhq/airlock/tool"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestListTools(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			f := newFixture(t, nil, nil)
			cs := tr.connect(t, f, nil)
			res, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatalf("ListTools: %v", err)
			}
			type listed struct {
				Name, Title, Description string
				Schema                   any
				// The four hints, each as sent: nil when the wire left it out.
				ReadOnly, Destructive, Idempotent, OpenWorld *bool
				AnnotationTitle                              string
			}
			var got, want []listed // the SDK lists tools by name
			for _, tl := range res.Tools {
				l := listed{Name: tl.Name, Title: tl.Title, Description: tl.Description, Schema: tl.InputSchema}
				if a := tl.Annotations; a != nil {
					l.ReadOnly, l.Destructive, l.Idempotent, l.OpenWorld = &a.ReadOnlyHint, a.DestructiveHint, &a.IdempotentHint, a.OpenWorldHint
					l.AnnotationTitle = a.Title
				}
				got = append(got, l)
			}
			for _, d := range tool.All() {
				var schema any
				if err := json.Unmarshal(d.Schema, &schema); err != nil {
					t.Fatal(err)
				}
				h := d.Hints
				want = append(want, listed{d.Name, h.Title, d.Description, schema, &h.ReadOnly, &h.Destructive, &h.Idempotent, &h.OpenWorld, h.Title})
			}
			slices.SortFunc(want, func(a, b listed) int { return strings.Compare(a.Name, b.Name) })
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("tools/list (-want +got):\n%s", diff)
			}
		})
	}
}

func TestListOnlyGivenTools(t *testing.T) {
	read, _ := tool.Lookup("read_file")
	f := newFixture(t, nil, &mcpserver.Options{Tools: []*tool.Def{read}})
	cs := connectStdio(t, f, nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 1 || res.Tools[0].Name != "read_file" {
		t.Fatalf("got tools %v, want only read_file", res.Tools)
	}
}

func TestEveryTool(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			f := newFixture(t, nil, nil)
			cs := tr.connect(t, f, nil)
			steps := []struct {
				tool     string
				args     map[string]any
				contains []string
				isError  bool
				exit     *int
			}{
				{"write_file", map[string]any{"path": "notes.txt", "content": "hello\nworld\n"}, []string{"wrote 12 bytes"}, false, nil},
				{"read_file", map[string]any{"path": "notes.txt"}, []string{"hello", "world"}, false, nil},
				{"edit_file", map[string]any{"path": "notes.txt", "old_string": "world", "new_string": "there"}, nil, false, nil},
				{"read_file", map[string]any{"path": "notes.txt"}, []string{"there"}, false, nil},
				{"glob", map[string]any{"pattern": "*.txt"}, []string{"notes.txt"}, false, nil},
				{"grep", map[string]any{"pattern": "the.e"}, []string{"notes.txt"}, false, nil},
				{"shell", map[string]any{"command": "cat notes.txt; exit 3"}, []string{"hello", "there", "[exit 3]"}, false, ptr(3)},
				{"read_file", map[string]any{"path": "missing.txt"}, []string{"missing.txt"}, true, nil},
			}
			for i, s := range steps {
				res := call(t, cs, s.tool, s.args)
				got := text(t, res)
				label := fmt.Sprintf("[airlock: %s · UNSANDBOXED · grant ", s.tool)
				if !strings.HasPrefix(got, label) {
					t.Errorf("step %d %s: text %q does not start with the label %q", i, s.tool, got, label)
				}
				for _, c := range s.contains {
					if !strings.Contains(got, c) {
						t.Errorf("step %d %s: text %q lacks %q", i, s.tool, got, c)
					}
				}
				if res.IsError != s.isError {
					t.Errorf("step %d %s: isError %v, want %v (text %q)", i, s.tool, res.IsError, s.isError, got)
				}
				m := callMeta(t, res)
				if m.Class != broker.ClassOK || !strings.HasPrefix(m.CallID, "call_") || m.Session == "" {
					t.Errorf("step %d %s: meta %+v, want class ok with call and session ids", i, s.tool, m)
				}
				if m.Isolation == nil || m.Isolation.Backend != "unsandboxed" {
					t.Errorf("step %d %s: meta isolation %+v, want backend unsandboxed", i, s.tool, m.Isolation)
				}
				if diff := cmp.Diff(s.exit, m.ExitCode); diff != "" {
					t.Errorf("step %d %s: exit code (-want +got):\n%s", i, s.tool, diff)
				}
			}
			data, err := os.ReadFile(filepath.Join(f.root, "notes.txt"))
			if err != nil || string(data) != "hello\nthere\n" {
				t.Errorf("notes.txt holds %q (%v), want the edited text", data, err)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestShellExitIsNotAnError pins the rule docs/mcp.md states: a command that
// ran and exited non-zero is a result (isError false, the exit code in the
// text and _meta); a command airlock had to end (here its timeout) is an
// error.
func TestShellExitIsNotAnError(t *testing.T) {
	f := newFixture(t, nil, nil)
	cs := connectStdio(t, f, nil)
	for _, tc := range []struct {
		command string
		exit    int
	}{
		{"exit 1", 1},
		{"false", 1},
		{"no-such-command-anywhere", 127},
		{"echo out; echo err >&2; exit 42", 42},
	} {
		res := call(t, cs, "shell", map[string]any{"command": tc.command})
		got := text(t, res)
		m := callMeta(t, res)
		if res.IsError || !strings.Contains(got, fmt.Sprintf("[exit %d]", tc.exit)) || m.ExitCode == nil || *m.ExitCode != tc.exit || m.Class != broker.ClassOK {
			t.Errorf("%q: isError=%v, exit %v, class %q, text %q; want a result (isError false) with exit %d", tc.command, res.IsError, m.ExitCode, m.Class, got, tc.exit)
		}
	}
	res := call(t, cs, "shell", map[string]any{"command": "sleep 30", "timeout": 1})
	if !res.IsError || !strings.Contains(text(t, res), "timed out") {
		t.Errorf("a command killed at its timeout: isError=%v %q, want an error", res.IsError, text(t, res))
	}
	// And the documentation says the same.
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "mcp.md"))
	if err != nil {
		t.Fatal(err)
	}
	if flat := strings.Join(strings.Fields(string(doc)), " "); !strings.Contains(flat, "A command that ran and exited non-zero is a result, not an error: `isError` is false") ||
		strings.Contains(flat, "a non-zero exit, a refusal") {
		t.Error("docs/mcp.md does not state that a non-zero exit is a result with isError false")
	}
}

func TestRefusedCall(t *testing.T) {
	outside := t.TempDir() // not granted
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("do not read"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			f := newFixture(t, nil, nil)
			cs := tr.connect(t, f, nil)
			for _, tc := range []struct {
				tool string
				args map[string]any
				want string
			}{
				{"read_file", map[string]any{"path": secret}, "[airlock: read_file · refused by grant "},
				{"write_file", map[string]any{"path": "../escape.txt", "content": "x"}, "[airlock: write_file · refused by grant "},
				{"shell", map[string]any{"command": "true", "cwd": outside}, "[airlock: shell · refused by grant "},
				{"read_file", map[string]any{"path": "a", "bogus": 1}, "bogus"},
				{"no_such_tool", map[string]any{}, ""},
			} {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tc.tool, Arguments: tc.args})
				if tc.tool == "no_such_tool" {
					// An unknown tool is the protocol's error, not a tool result.
					if err == nil {
						t.Errorf("%s: no error for an unknown tool", tc.tool)
					}
					continue
				}
				if err != nil {
					t.Fatalf("%s: protocol error %v, want an isError result", tc.tool, err)
				}
				got := text(t, res)
				if !res.IsError || !strings.Contains(got, tc.want) {
					t.Errorf("%s %v: got isError=%v %q, want an isError result containing %q", tc.tool, tc.args, res.IsError, got, tc.want)
				}
				if strings.Contains(got, "do not read") {
					t.Errorf("%s: the refused file's content leaked: %q", tc.tool, got)
				}
				if m := callMeta(t, res); m.Class != broker.ClassRefused || m.Rule == "" {
					t.Errorf("%s: meta %+v, want class refused with the rule", tc.tool, m)
				}
			}
		})
	}
}

// untilFile returns a shell command that runs until the file gate exists, and
// a func that creates it (once; also at the test's end, so a failed test
// leaves nothing running). A call of it lasts as long as the test needs,
// whatever the machine's load.
func untilFile(t *testing.T, dir string) (command string, open func()) {
	t.Helper()
	gate := filepath.Join(dir, "gate")
	var once sync.Once
	open = func() {
		once.Do(func() {
			if err := os.WriteFile(gate, nil, 0o644); err != nil {
				t.Error(err)
			}
		})
	}
	t.Cleanup(open)
	return fmt.Sprintf("while [ ! -e '%s' ]; do sleep 0.02; done", gate), open
}

// progressCall makes a call with a progress token that lasts until the
// client has seen want notifications, and returns them and how long the
// call took. The count depends on no timing: a ticker run late gives later
// notifications, not fewer.
func progressCall(t *testing.T, f *fixture, connect func(testing.TB, *fixture, *mcp.ClientOptions) *mcp.ClientSession, token any, want int) (got []*mcp.ProgressNotificationParams, took time.Duration) {
	t.Helper()
	command, open := untilFile(t, f.root)
	var mu sync.Mutex
	cs := connect(t, f, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			got = append(got, r.Params)
			if len(got) == want {
				open()
			}
			mu.Unlock()
		},
	})
	// If the notifications never come, the call ends after a minute and the
	// count tells.
	defer time.AfterFunc(time.Minute, open).Stop()
	p := &mcp.CallToolParams{Name: "shell", Arguments: map[string]any{"command": command}}
	p.SetProgressToken(token)
	start := time.Now()
	res, err := cs.CallTool(context.Background(), p)
	if err != nil || res.IsError {
		t.Fatalf("CallTool: %v %v", err, res)
	}
	took = time.Since(start)
	// A call without a token gets no notifications.
	call(t, cs, "shell", map[string]any{"command": "sleep 0.7"})
	mu.Lock()
	defer mu.Unlock()
	return got, took
}

func TestProgress(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			f := newFixture(t, nil, &mcpserver.Options{ProgressInterval: 300 * time.Millisecond})
			got, took := progressCall(t, f, tr.connect, "tok-1", 3)
			// The call lasted until the third; a ticker never runs early,
			// so there is at most one per interval.
			if most := int(took / (300 * time.Millisecond)); len(got) < 3 || len(got) > most {
				t.Fatalf("got %d progress notifications for a call of %v at 300ms, want 3 to %d", len(got), took, most)
			}
			for i, n := range got {
				if n.ProgressToken != "tok-1" || n.Progress != float64(i+1) || !strings.Contains(n.Message, "shell still running") {
					t.Errorf("notification %d: %+v", i, n)
				}
			}
		})
	}
}

func TestProgressDefaultInterval(t *testing.T) {
	f := newFixture(t, nil, nil)
	got, took := progressCall(t, f, connectStdio, 7, 2)
	// Two ticks, and no more than one a second.
	if most := int(took / time.Second); len(got) < 2 || len(got) > most {
		t.Errorf("got %d progress notifications for a call of %v, want one a second (2 to %d)", len(got), took, most)
	}
}

// TestSessionPerConnection checks that each MCP session gets its own broker
// session, closed when the MCP session ends.
func TestSessionPerConnection(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			f := newFixture(t, nil, nil)
			a, b := tr.connect(t, f, nil), tr.connect(t, f, nil)
			ma := callMeta(t, call(t, a, "glob", map[string]any{"pattern": "*"}))
			mb := callMeta(t, call(t, b, "glob", map[string]any{"pattern": "*"}))
			ma2 := callMeta(t, call(t, a, "glob", map[string]any{"pattern": "*"}))
			if ma.Session == mb.Session || ma.Session != ma2.Session {
				t.Errorf("sessions a=%s b=%s a again=%s: want one per connection", ma.Session, mb.Session, ma2.Session)
			}
			if !hasLine(metrics(t, f.srv), "airlock_sessions_open 2") {
				t.Errorf("want 2 open sessions:\n%s", metrics(t, f.srv))
			}
			a.Close()
			eventually(t, 5*time.Second, "the first broker session to close", func() bool {
				return hasLine(metrics(t, f.srv), "airlock_sessions_open 1")
			})
			closed := map[string]bool{}
			for _, r := range auditRecords(t, f.records) {
				if r["kind"] == "session" && r["decision"] == "close" {
					closed[r["session"].(string)] = true
				}
			}
			if diff := cmp.Diff(map[string]bool{ma.Session: true}, closed); diff != "" {
				t.Errorf("closed sessions (-want +got):\n%s", diff)
			}
		})
	}
}

// TestConcurrentSessions runs calls from many sessions at once, through the
// native sandbox where the host has it.
func TestConcurrentSessions(t *testing.T) {
	for _, bk := range []string{"unsandboxed", "native"} {
		t.Run(bk, func(t *testing.T) {
			var backend sandbox.Backend
			if bk == "native" {
				backend = sandboxtest.Native(t)
			}
			f := newFixture(t, backend, nil)
			base := serveHTTP(t, f, testToken)
			const sessions, calls = 8, 4
			clients := make([]*mcp.ClientSession, sessions)
			for i := range clients {
				clients[i] = connectHTTP(t, base, testToken, nil)
			}
			var wg sync.WaitGroup
			var mu sync.Mutex
			failures := map[string]int{}
			for i, cs := range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for j := range calls {
						name := fmt.Sprintf("s%d-%d.txt", i, j)
						res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "write_file", Arguments: map[string]any{"path": name, "content": name}})
						if err != nil || res.IsError {
							mu.Lock()
							failures[fmt.Sprint(err, res.Content[0].(*mcp.TextContent).Text)]++
							mu.Unlock()
						}
					}
				}()
			}
			wg.Wait()
			if len(failures) > 0 {
				t.Errorf("failed calls: %v", failures)
			}
			for _, r := range auditRecords(t, f.records) {
				if r["class"] == string(broker.ClassSandbox) {
					t.Errorf("sandbox failure: %v", r["detail"])
				}
			}
			if got := metrics(t, f.srv); !hasLine(got, fmt.Sprintf(`airlock_calls_total{tool="write_file",class="ok"} %d`, sessions*calls)) {
				t.Errorf("want %d ok write_file calls in the metrics", sessions*calls)
			}
		})
	}
}

// TestOpenFailure checks a session that cannot be opened is an isError
// result (with no detail of the failure), and that the next call tries again.
func TestOpenFailure(t *testing.T) {
	f := newFixture(t, nil, nil)
	var fail atomic.Bool
	fail.Store(true)
	open := f.open
	srv, err := mcpserver.New(&mcpserver.Options{Open: func(ctx context.Context) (*broker.Session, error) {
		if fail.Load() {
			return nil, errors.New("records directory /secret/path is not writable")
		}
		return open(ctx)
	}})
	if err != nil {
		t.Fatal(err)
	}
	f.srv = srv
	cs := connectStdio(t, f, nil)
	res := call(t, cs, "glob", map[string]any{"pattern": "*"})
	if got := text(t, res); !res.IsError || !strings.Contains(got, "could not open a session") || strings.Contains(got, "/secret/path") {
		t.Errorf("call when the session cannot open: isError=%v %q", res.IsError, got)
	}
	if m := callMeta(t, res); m.Class != mcpserver.ClassUnavailable {
		t.Errorf("meta class %q, want %q", m.Class, mcpserver.ClassUnavailable)
	}
	fail.Store(false)
	if res := call(t, cs, "glob", map[string]any{"pattern": "*"}); res.IsError {
		t.Errorf("call once the session can open: %q", text(t, res))
	}
}

// stuck is a backend with a warm pool whose release waits for the test:
// a broker session closing cannot finish (nor audit its close) until then.
type stuck struct {
	sandbox.Backend
	closing, release chan struct{}
}

func (s *stuck) Pool(int) func() {
	return func() {
		close(s.closing)
		<-s.release
	}
}

func (s *stuck) Prewarm(*sandbox.Spec) error { return nil }

// TestSessionOpenUntilClosed checks that a broker session is counted open
// until its close is done and audited: while the session of a departed
// client is still closing, airlock_sessions_open counts it, and once the
// gauge drops the close record is there. (The gauge used to drop before
// the close began, so a reader could see the session gone with no close
// record; TestSessionPerConnection failed that way under load.)
func TestSessionOpenUntilClosed(t *testing.T) {
	d, err := direct.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	bk := &stuck{Backend: d, closing: make(chan struct{}), release: make(chan struct{})}
	f := newFixture(t, bk, nil)
	cs := connectStdio(t, f, nil)
	call(t, cs, "glob", map[string]any{"pattern": "*"})
	cs.Close()
	<-bk.closing
	if !hasLine(metrics(t, f.srv), "airlock_sessions_open 1") {
		t.Errorf("a session still closing is not counted open:\n%s", metrics(t, f.srv))
	}
	close(bk.release)
	eventually(t, 10*time.Second, "the broker session to close", func() bool {
		return hasLine(metrics(t, f.srv), "airlock_sessions_open 0")
	})
	n := 0
	for _, r := range auditRecords(t, f.records) {
		if r["kind"] == "session" && r["decision"] == "close" {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d session close records once the gauge dropped, want 1", n)
	}
}
