package interop_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/testenv"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
	buildOut  []byte
)

// airlock builds the airlock binary once per test run.
func airlock(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "airlock-interop-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "airlock")
		cmd := exec.Command("go", "build", "-o", binPath, "github.com/airlockhq/airlock/cmd/airlock")
		buildOut, buildErr = cmd.CombinedOutput()
	})
	if buildErr != nil {
		t.Fatalf("building airlock: %v\n%s", buildErr, buildOut)
	}
	return binPath
}

// sandboxArgs are the flags that pick the backend: the native sandbox where
// this host has it, else the unsandboxed backend (the protocol is the same).
func sandboxArgs(t testing.TB) []string {
	t.Helper()
	if err := exec.Command(airlock(t), "doctor").Run(); err != nil {
		if os.Getenv("AIRLOCK_REQUIRE_FEATURES") == "1" {
			t.Fatalf("airlock doctor: %v: the native sandbox is required", err)
		}
		t.Logf("airlock doctor: %v: using --unsandboxed", err)
		return []string{"--unsandboxed"}
	}
	return nil
}

// workspace is a granted directory with a file to read, a file outside it,
// and a records directory.
type workspace struct {
	root, outside, records string
}

func newWorkspace(t testing.TB) workspace {
	t.Helper()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w := workspace{root: filepath.Join(dir, "root"), outside: filepath.Join(dir, "outside.txt"), records: filepath.Join(dir, "records")}
	if err := os.Mkdir(w.root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(w.root, "hello.txt"), []byte("hello from interop\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(w.outside, []byte("interop secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return w
}

// auditClasses returns the class of every call record, and the number of
// sessions opened and closed.
func auditClasses(t testing.TB, records string) (classes []string, opened, closed int) {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(records, "*", "*"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var r struct{ Kind, Class, Decision string }
			if json.Unmarshal([]byte(line), &r) != nil {
				continue
			}
			switch {
			case r.Kind == "call":
				classes = append(classes, r.Class)
			case r.Kind == "session" && r.Decision == "open":
				opened++
			case r.Kind == "session" && r.Decision == "close":
				closed++
			}
		}
	}
	return classes, opened, closed
}

// nodeClient installs the TypeScript SDK (testenv.TypeScriptSDK) and
// returns the path of client.mjs beside it.
func nodeClient(t testing.TB) string {
	t.Helper()
	dir := testenv.TypeScriptSDK(t)
	src, err := os.ReadFile("client.mjs")
	if err != nil {
		t.Fatal(err)
	}
	// The script must sit beside node_modules for Node to resolve the SDK.
	script := filepath.Join(dir, "client.mjs")
	tmp := script + "." + randomHex(4)
	if err := os.WriteFile(tmp, src, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, script); err != nil {
		t.Fatal(err)
	}
	return script
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// runNode runs the TypeScript client with env and fails the test unless
// every check passed.
func runNode(t *testing.T, script string, env ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	t.Logf("TypeScript client:\n%s", out)
	if err != nil || !strings.Contains(string(out), "\nPASS") {
		t.Fatalf("the TypeScript client failed: %v", err)
	}
}

// checkAudit checks the calls the TypeScript client made were all audited,
// the cancelled one included, and its session was closed.
func checkAudit(t *testing.T, records string) {
	t.Helper()
	// A cap, not a timing: closing drains the warm pool and waits for
	// every teardown, which a loaded machine slows.
	eventually(t, 60*time.Second, "the session to close", func() bool {
		_, opened, closed := auditClasses(t, records)
		return opened == 1 && closed == 1
	})
	classes, _, _ := auditClasses(t, records)
	count := map[string]int{}
	for _, c := range classes {
		count[c]++
	}
	// read_file, shell, the progress shell and glob are ok; one refused;
	// one cancelled.
	if count["ok"] != 4 || count["refused"] != 1 || count["cancelled"] != 1 || len(classes) != 6 {
		t.Errorf("audited call classes %v, want 4 ok, 1 refused, 1 cancelled", classes)
	}
}

func eventually(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// inFlight reports whether a call of the tool is marked in flight in the
// records directory: the broker writes the mark (under .live/<session>/)
// before the call's sandbox is built and removes it once the call is
// recorded.
func inFlight(records, tool string) bool {
	flights, _ := audit.InFlightUnder(records)
	for _, f := range flights {
		if f.Kind == audit.KindCall && f.Tool == tool {
			return true
		}
	}
	return false
}

func TestTypeScriptClientStdio(t *testing.T) {
	script := nodeClient(t)
	bin := airlock(t)
	w := newWorkspace(t)
	args, _ := json.Marshal(append([]string{"--root", w.root}, sandboxArgs(t)...))
	runNode(t, script, "MODE=stdio", "AIRLOCK_BIN="+bin, "AIRLOCK_ARGS="+string(args),
		"AIRLOCK_STATE_DIR="+w.records, "OUTSIDE="+w.outside)
	checkAudit(t, w.records)
}

// server is a running `airlock serve`.
type server struct {
	cmd    *exec.Cmd
	url    string // the /mcp endpoint
	base   string
	token  string
	lines  []string // stderr up to the "serving MCP at" line
	exited chan error
}

// startServe starts `airlock serve` on a free loopback port, with a token
// in AIRLOCK_TOKEN.
func startServe(t *testing.T, w workspace, extra ...string) *server {
	t.Helper()
	token := randomHex(24)
	s := startServeEnv(t, w, []string{"AIRLOCK_TOKEN=" + token}, extra...)
	s.token = token
	return s
}

// startServeEnv starts `airlock serve` on a free loopback port with env
// added to the environment, and collects its stderr lines until it says
// where it listens.
func startServeEnv(t *testing.T, w workspace, env []string, extra ...string) *server {
	t.Helper()
	s := &server{exited: make(chan error, 1)}
	args := append([]string{"serve", "--listen", "127.0.0.1:0", "--root", w.root}, sandboxArgs(t)...)
	s.cmd = exec.Command(airlock(t), append(args, extra...)...)
	s.cmd.Env = append(append(os.Environ(), "AIRLOCK_STATE_DIR="+w.records), env...)
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.cmd.Process.Kill()
		<-s.exited
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		listening := false
		for sc.Scan() {
			line := sc.Text()
			t.Logf("serve: %s", line)
			if !listening {
				s.lines = append(s.lines, line)
			}
			if _, after, ok := strings.Cut(line, "serving MCP at "); ok && !listening {
				listening = true
				url, _, _ := strings.Cut(after, " ")
				found <- url
			}
		}
		io.Copy(io.Discard, stderr)
		s.exited <- s.cmd.Wait()
	}()
	select {
	case s.url = <-found:
		s.base = strings.TrimSuffix(s.url, "/mcp")
	case <-time.After(20 * time.Second):
		t.Fatal("airlock serve did not say where it listens")
	}
	return s
}

// stop sends SIGTERM and waits for a clean exit.
func (s *server) stop(t *testing.T, within time.Duration) {
	t.Helper()
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.exited:
		s.exited <- err // for the cleanup
		if err != nil {
			t.Errorf("airlock serve after SIGTERM: %v, want exit 0", err)
		}
	case <-time.After(within):
		t.Fatalf("airlock serve still running %v after SIGTERM", within)
	}
}

func TestTypeScriptClientHTTP(t *testing.T) {
	script := nodeClient(t)
	w := newWorkspace(t)
	s := startServe(t, w)

	resp, err := http.Get(s.base + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz: %v %v", resp, err)
	}
	resp.Body.Close()
	resp, err = http.Post(s.url, "application/json", strings.NewReader(`{}`))
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("POST without a token: %v %v, want 401", resp, err)
	}
	resp.Body.Close()

	runNode(t, script, "MODE=http", "MCP_URL="+s.url, "MCP_TOKEN="+s.token, "OUTSIDE="+w.outside)

	// The cancelled call is counted when the server has stopped its
	// sandbox, which may come after the client has moved on: wait for it.
	wants := []string{`airlock_calls_total{tool="read_file",class="refused"} 1`, `airlock_calls_total{tool="shell",class="cancelled"} 1`}
	var body []byte
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		req, _ := http.NewRequest(http.MethodGet, s.base+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+s.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ = io.ReadAll(resp.Body)
		resp.Body.Close()
		missing := slices.ContainsFunc(wants, func(w string) bool { return !strings.Contains(string(body), w) })
		if !missing || time.Now().After(deadline) {
			break
		}
	}
	for _, want := range wants {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q:\n%s", want, body)
		}
	}
	// The TypeScript client leaves without ending its session (no DELETE):
	// the session lasts until it idles out or the server stops.
	s.stop(t, 15*time.Second)
	checkAudit(t, w.records)
}

// TestServeSIGTERMStopsCalls checks the graceful shutdown of the real
// binary: a call that outlives --shutdown-timeout is stopped and audited,
// and the server exits 0.
func TestServeSIGTERMStopsCalls(t *testing.T) {
	w := newWorkspace(t)
	s := startServe(t, w, "--shutdown-timeout", "1s")
	hc := &http.Client{Transport: &bearer{s.token}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "go-client", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: s.url, HTTPClient: hc, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "hello.txt"}}); err != nil || res.IsError {
		t.Fatalf("read_file: %v %v", res, err)
	}
	done := make(chan struct{})
	go func() {
		cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "shell", Arguments: map[string]any{"command": "sleep 30"}})
		close(done)
	}()
	eventually(t, 10*time.Second, "the shell call to be in flight", func() bool { return inFlight(w.records, "shell") })
	start := time.Now()
	s.stop(t, 10*time.Second)
	t.Logf("serve exited %v after SIGTERM", time.Since(start))
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Error("the client's call did not end with the server")
	}
	classes, opened, closed := auditClasses(t, w.records)
	if len(classes) != 2 || classes[0] != "ok" || classes[1] != "cancelled" || opened != 1 || closed != 1 {
		t.Errorf("audit: calls %v, sessions opened %d closed %d; want [ok cancelled], 1 and 1", classes, opened, closed)
	}
}

// TestGoClientStdio drives `airlock mcp` through the Go SDK's command
// transport, and checks the process ends when the client does.
func TestGoClientStdio(t *testing.T) {
	w := newWorkspace(t)
	cmd := exec.Command(airlock(t), append([]string{"mcp", "--root", w.root}, sandboxArgs(t)...)...)
	cmd.Env = append(os.Environ(), "AIRLOCK_STATE_DIR="+w.records)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "go-client", Version: "1"}, nil).Connect(context.Background(),
		&mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "grep", Arguments: map[string]any{"pattern": "interop"}})
	if err != nil || res.IsError {
		t.Fatalf("grep: %v %v", res, err)
	}
	if txt := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(txt, "hello.txt") {
		t.Errorf("grep: %q", txt)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if cmd.ProcessState == nil || !cmd.ProcessState.Success() {
		t.Errorf("airlock mcp after the client closed: %v, want exit 0", cmd.ProcessState)
	}
	if _, opened, closed := auditClasses(t, w.records); opened != 1 || closed != 1 {
		t.Errorf("sessions opened %d closed %d, want 1 and 1", opened, closed)
	}
}

type bearer struct{ token string }

func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// TestMCPSIGTERMStopsCalls checks `airlock mcp` on SIGTERM: a call that
// outlives --shutdown-timeout is stopped, its client gets an isError result,
// and the process exits 0.
func TestMCPSIGTERMStopsCalls(t *testing.T) {
	w := newWorkspace(t)
	cmd := exec.Command(airlock(t), append([]string{"mcp", "--root", w.root, "--shutdown-timeout", "500ms"}, sandboxArgs(t)...)...)
	cmd.Env = append(os.Environ(), "AIRLOCK_STATE_DIR="+w.records)
	// Pipes of our own, so this test (not the SDK) waits for the process.
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() { cmd.Process.Kill() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "go-client", Version: "1"}, nil).Connect(context.Background(),
		&mcp.IOTransport{Reader: stdout, Writer: stdin}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "shell", Arguments: map[string]any{"command": "sleep 30"}})
		if err != nil {
			t.Errorf("CallTool: %v, want an isError result", err)
		}
		got <- res
	}()
	eventually(t, 10*time.Second, "the session to open", func() bool {
		_, opened, _ := auditClasses(t, w.records)
		return opened == 1
	})
	eventually(t, 10*time.Second, "the shell call to be in flight", func() bool { return inFlight(w.records, "shell") })
	start := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case res := <-got:
		if res != nil && (!res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "cancelled")) {
			t.Errorf("the stopped call: %+v, want isError saying it was cancelled", res.Content[0])
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call did not end after SIGTERM")
	}
	t.Logf("the call ended %v after SIGTERM", time.Since(start))
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("airlock mcp after SIGTERM: %v, want exit 0", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("airlock mcp still running after SIGTERM")
	}
	if classes, opened, closed := auditClasses(t, w.records); len(classes) != 1 || classes[0] != "cancelled" || opened != 1 || closed != 1 {
		t.Errorf("audit: calls %v, sessions opened %d closed %d; want [cancelled], 1 and 1", classes, opened, closed)
	}
}

// TestMCPCleanEndLeavesNothing (issue 11.2): a client that makes one call
// and closes stdin leaves no placeholder in the tree and no cgroup of the
// process behind, every time: airlock mcp exits only after every sandbox is
// torn down.
func TestMCPCleanEndLeavesNothing(t *testing.T) {
	args := sandboxArgs(t)
	for i := range 6 {
		w := newWorkspace(t)
		cmd := exec.Command(airlock(t), append([]string{"mcp", "--root", w.root}, args...)...)
		cmd.Env = append(os.Environ(), "AIRLOCK_STATE_DIR="+w.records)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "go-client", Version: "1"}, nil).Connect(context.Background(),
			&mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatal(err)
		}
		tool := []string{"read_file", "shell"}[i%2]
		arg := map[string]any{"path": "hello.txt"}
		if tool == "shell" {
			arg = map[string]any{"command": "cat hello.txt"}
		}
		if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: arg}); err != nil || res.IsError {
			t.Fatalf("%s: %v %v", tool, res, err)
		}
		if err := cs.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		entries, err := os.ReadDir(w.root)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			if e.Name() != "hello.txt" {
				t.Errorf("trial %d (%s): left in the tree after exit: %s", i, tool, e.Name())
			}
		}
		if cg := cgroupsOf(cmd.Process.Pid); len(cg) > 0 {
			t.Errorf("trial %d (%s): cgroups left after exit: %v", i, tool, cg)
		}
	}
}

// cgroupsOf lists the airlock cgroups a process (by pid) created.
func cgroupsOf(pid int) []string {
	var out []string
	pat := "airlock-" + strconv.Itoa(pid) + "-*"
	filepath.Walk("/sys/fs/cgroup", func(p string, fi os.FileInfo, err error) error {
		if err != nil || !fi.IsDir() {
			return nil
		}
		if ok, _ := filepath.Match(pat, fi.Name()); ok {
			out = append(out, p)
			return filepath.SkipDir
		}
		if strings.Count(strings.TrimPrefix(p, "/sys/fs/cgroup"), "/") > 4 {
			return filepath.SkipDir
		}
		return nil
	})
	return out
}

// TestMCPMalformedLines writes malformed lines to a real `airlock mcp`: each
// gets a JSON-RPC error, the call sent before them is answered, the session
// goes on, and the process exits 0 when its input ends.
func TestMCPMalformedLines(t *testing.T) {
	w := newWorkspace(t)
	cmd := exec.Command(airlock(t), append([]string{"mcp", "--root", w.root}, sandboxArgs(t)...)...)
	cmd.Env = append(os.Environ(), "AIRLOCK_STATE_DIR="+w.records)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"shell","arguments":{"command":"sleep 1; echo slept"}}}`,
		`{`,
		`hello`,
		`{"jsonrpc":"2.0","id":1e400,"method":"ping"}`,
		strings.Repeat("[", 1000) + strings.Repeat("]", 1000),
		`{"jsonrpc":"1.0","id":3,"method":"ping"}`,
		`[{"jsonrpc":"2.0","id":4,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"read_file","name":"shell","arguments":{"path":"x","command":"touch pwned"}}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/list"}`,
	}
	if _, err := io.WriteString(stdin, strings.Join(lines, "\n")+"\n"); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 1<<20)
	var codes []int64
	answered := map[string]string{}
	for len(answered) < 3 && sc.Scan() {
		var r struct {
			ID    json.RawMessage
			Error *struct{ Code int64 }
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("an unparseable line from airlock mcp: %q", sc.Text())
		}
		switch {
		case r.Error != nil:
			codes = append(codes, r.Error.Code)
		default:
			answered[string(r.ID)] = sc.Text()
		}
	}
	if len(answered) < 3 {
		t.Fatalf("airlock mcp stopped answering: answered %v, errors %v", answered, codes)
	}
	want := []int64{-32700, -32700, -32600, -32600, -32600, -32600, -32600}
	if fmt.Sprint(codes) != fmt.Sprint(want) {
		t.Errorf("error codes %v, want %v", codes, want)
	}
	if !strings.Contains(answered["2"], "slept") || !strings.Contains(answered["6"], "read_file") {
		t.Errorf("answers %v: want the shell call's and the tools list", answered)
	}
	if _, err := os.Stat(filepath.Join(w.root, "pwned")); err == nil {
		t.Error("the ambiguous call ran shell")
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Errorf("airlock mcp after its input ended: %v, want exit 0", err)
	}
}

// TestBrokerKilledMidCall (issue 11.3): airlock mcp is killed (SIGKILL) at
// several points of a call: right after the request is sent (before or
// while the sandbox is built), while the command runs, with background work
// running, and right after the answer arrives. After the next start of
// airlock over the same records, the tree holds no placeholder, no cgroup
// of the dead broker remains, and the audit log accounts for every call,
// background work and session exactly once, the interrupted ones as such.
func TestBrokerKilledMidCall(t *testing.T) {
	args := sandboxArgs(t)
	points := []string{"after-send", "while-running", "background", "after-answer"}
	for _, point := range points {
		t.Run(point, func(t *testing.T) {
			w := newWorkspace(t)
			env := append(os.Environ(), "AIRLOCK_STATE_DIR="+w.records)
			cmd := exec.Command(airlock(t), append([]string{"mcp", "--root", w.root}, args...)...)
			cmd.Env = env
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "go-client", Version: "1"}, nil).Connect(context.Background(),
				&mcp.CommandTransport{Command: cmd}, nil)
			if err != nil {
				t.Fatal(err)
			}
			pid := cmd.Process.Pid
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			callAsync := func(name string, a map[string]any) chan error {
				ch := make(chan error, 1)
				go func() {
					_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: a})
					ch <- err
				}()
				return ch
			}
			marker := filepath.Join(w.root, "started")
			switch point {
			case "after-send":
				// Killed as soon as the call is marked in flight: before
				// or while its sandbox is built.
				callAsync("shell", map[string]any{"command": "sleep 600"})
				eventually(t, 30*time.Second, "the call marked in flight", func() bool {
					m, _ := audit.InFlightUnder(w.records)
					return len(m) > 0
				})
			case "while-running":
				done := callAsync("shell", map[string]any{"command": "touch started; sleep 600"})
				eventually(t, 60*time.Second, "the command started", func() bool {
					select {
					case err := <-done:
						t.Fatalf("the call ended before the broker was killed: %v", err)
					default:
					}
					_, err := os.Stat(marker)
					return err == nil
				})
			case "background":
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "shell", Arguments: map[string]any{"command": "touch started; sleep 600", "run_in_background": true}})
				if err != nil || res.IsError {
					t.Fatalf("background start: %v %v", res, err)
				}
				eventually(t, 30*time.Second, "the work started", func() bool { _, err := os.Stat(marker); return err == nil })
			case "after-answer":
				if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "hello.txt"}}); err != nil || res.IsError {
					t.Fatalf("read_file: %v %v", res, err)
				}
			}
			if err := cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			cmd.Wait()
			cs.Close()

			// The next start of airlock over the same records.
			next := exec.Command(airlock(t), append([]string{"call", "--root", w.root, "shell", `{"command": "true"}`}, args...)...)
			next.Env = env
			if out, err := next.CombinedOutput(); err != nil {
				t.Fatalf("next start: %v\n%s", err, out)
			}
			entries, err := os.ReadDir(w.root)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if e.Name() != "hello.txt" && e.Name() != "started" {
					t.Errorf("left in the tree: %s", e.Name())
				}
			}
			if cg := cgroupsOf(pid); len(cg) > 0 {
				t.Errorf("cgroups of the dead broker left: %v", cg)
			}
			out, err := exec.Command(airlock(t), "log", "--json", "--records", w.records).Output()
			if err != nil {
				t.Fatalf("airlock log: %v", err)
			}
			opened, closed := map[string]int{}, map[string]int{}
			calls := map[string]int{}
			var starts, ends, interrupted int
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				var r struct {
					Kind, Session, Decision, Class string
					CallID                         string `json:"call_id"`
				}
				if err := json.Unmarshal([]byte(line), &r); err != nil {
					t.Fatalf("log line %q: %v", line, err)
				}
				switch r.Kind {
				case "session":
					if r.Decision == "open" {
						opened[r.Session]++
					} else {
						closed[r.Session]++
					}
				case "call":
					calls[r.CallID]++
				case "background-start":
					starts++
				case "background-end":
					ends++
				}
				if r.Class == "interrupted" {
					interrupted++
				}
			}
			for s, n := range opened {
				if n != 1 || closed[s] != 1 {
					t.Errorf("session %s: opened %d closed %d, want 1 and 1\n%s", s, n, closed[s], out)
				}
			}
			for id, n := range calls {
				if n != 1 {
					t.Errorf("call %s recorded %d times\n%s", id, n, out)
				}
			}
			if starts != ends {
				t.Errorf("background starts %d, ends %d\n%s", starts, ends, out)
			}
			if point != "after-answer" && interrupted < 2 {
				t.Errorf("%d interrupted records, want the call (or work) and the session\n%s", interrupted, out)
			}
		})
	}
}
