package toolserver_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandboxtest"
	"github.com/airlockhq/airlock/internal/toolserver"
)

const testToken = "0123456789abcdef-test-token"

// testHeartbeat keeps dead-peer detection quick in tests.
const testHeartbeat = 200 * time.Millisecond

func TestMain(m *testing.M) {
	sandboxtest.RunHiddenMode()
	if len(os.Args) == 3 && (os.Args[1] == "connect" || os.Args[1] == "release") {
		os.Exit(fakeKubeHelper(os.Args[1], os.Args[2]))
	}
	if os.Getenv("TOOLSERVER_TEST_CHILD") != "" {
		os.Exit(childMain(os.Getenv("TOOLSERVER_TEST_ROOT")))
	}
	os.Exit(m.Run())
}

// childMain is the test binary re-run as a real tool-server process
// (WebSocket) on the listener it inherits as descriptor 3, granting root
// read-write. It prints "ready" on stdout once it serves.
func childMain(root string) int {
	g, err := grant.FromFlags(root, grant.Flags{ReadWrite: []string{root}})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	b, err := sandboxtest.New()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	srv, err := toolserver.NewServer(&toolserver.ServerOptions{Grant: g, Backend: b, Name: "child", Heartbeat: testHeartbeat})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ln, err := net.FileListener(os.NewFile(3, "listener"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("ready")
	_ = http.Serve(ln, srv.Handler(testToken))
	return 0
}

// child is a tool-server process.
type child struct {
	cmd  *exec.Cmd
	addr string
}

// startChild starts a tool-server process on p's listener and waits until
// it serves. The process inherits the listener, so a child started again
// after a kill serves the same address, which nothing else can have taken.
func startChild(t testing.TB, p *port, root string) *child {
	t.Helper()
	lf, err := p.ln.File()
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "TOOLSERVER_TEST_CHILD=1", "TOOLSERVER_TEST_ROOT="+root)
	cmd.ExtraFiles = []*os.File{lf}
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &child{cmd: cmd, addr: p.addr}
	t.Cleanup(c.kill)
	line, err := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "ready" {
		t.Fatalf("tool-server child did not start: %q %v", line, err)
	}
	return c
}

// kill kills the tool-server with SIGKILL and reaps it.
func (c *child) kill() {
	if c.cmd.ProcessState == nil {
		_ = c.cmd.Process.Kill()
		_ = c.cmd.Wait()
	}
}

// port is a loopback listener the test holds for its whole run and hands
// to each tool-server child it starts: an address picked free and released
// for the child to listen on again could be taken by another process in
// between (a loaded CI machine runs many).
type port struct {
	ln   *net.TCPListener
	addr string
}

// listenPort opens a loopback listener on a free port, closed at the
// test's end.
func listenPort(t testing.TB) *port {
	t.Helper()
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return &port{ln: ln, addr: ln.Addr().String()}
}

// workspace is a granted directory with a few files, and a records
// directory outside it.
type workspace struct {
	root, records string
	grant         *grant.Grant
}

func newWorkspace(t testing.TB) *workspace {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w := &workspace{root: root, records: t.TempDir()}
	w.reset(t)
	if w.grant, err = grant.FromFlags(root, grant.Flags{ReadWrite: []string{root}}); err != nil {
		t.Fatal(err)
	}
	return w
}

// reset puts the workspace's files back as they were at the start.
func (w *workspace) reset(t testing.TB) {
	t.Helper()
	entries, _ := os.ReadDir(w.root)
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(w.root, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	for name, content := range map[string]string{
		"a.txt":         "alpha\nbeta\ngamma\n",
		"dir/b.txt":     "Beta one\nbeta two\n",
		"dir/sub/c.go":  "package c\n\nfunc Beta() {}\n",
		"dir/empty.txt": "",
	} {
		p := filepath.Join(w.root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// session opens a broker session over backend.
func (w *workspace) session(t testing.TB, backend sandbox.Backend) *broker.Session {
	t.Helper()
	s, err := broker.Open(&broker.Options{Grant: w.grant, Backend: backend, RecordsDir: w.records, Pool: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// inProcess serves a tool-server in this process on a loopback WebSocket.
func inProcess(t testing.TB, w *workspace) (*toolserver.Server, string) {
	t.Helper()
	return serveGrant(t, w.grant)
}

// serveGrant serves a tool-server capped by g, over the native backend,
// in this process on a loopback WebSocket.
func serveGrant(t testing.TB, g *grant.Grant) (*toolserver.Server, string) {
	t.Helper()
	return serveWith(t, &toolserver.ServerOptions{Grant: g})
}

// serveWith serves a tool-server with o, over the native backend unless o
// names one, in this process on a loopback WebSocket.
func serveWith(t testing.TB, o *toolserver.ServerOptions) (*toolserver.Server, string) {
	t.Helper()
	opts := *o
	if opts.Backend == nil {
		opts.Backend = sandboxtest.Native(t)
	}
	if opts.Name == "" {
		opts.Name = "test"
	}
	if opts.Heartbeat == 0 {
		opts.Heartbeat = testHeartbeat
	}
	srv, err := toolserver.NewServer(&opts)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv.Handler(testToken)}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return srv, "ws://" + ln.Addr().String()
}

// remote connects a remote backend to url.
func remote(t testing.TB, url string, local sandbox.Backend) *toolserver.Backend {
	t.Helper()
	return remoteBeating(t, url, local, testHeartbeat)
}

// remoteBeating is remote with the heartbeat interval iv: a test whose
// point is not liveness gives a loaded machine's hands room to answer.
func remoteBeating(t testing.TB, url string, local sandbox.Backend, iv time.Duration) *toolserver.Backend {
	t.Helper()
	b, err := toolserver.New(context.Background(), &toolserver.Options{
		Endpoint: url, Token: testToken, Local: local,
		Heartbeat: iv, MaxBackoff: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}

// waitFor polls cond until it holds, failing after a generous deadline:
// an event to wait on, not a time window asserted.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// frameProxy sits between a broker and a tool-server on loopback and
// relays WebSocket frames, letting a test drop, hold, duplicate or reorder
// them. Each broker connection gets its own upstream connection; when
// either end goes, both do.
type frameProxy struct {
	upstream string
	// hook, when set, decides what happens to each frame: it calls send
	// zero or more times, now or later.
	hook  atomic.Pointer[func(toBroker bool, f *toolserver.Frame, p []byte, send func([]byte))]
	conns atomic.Int64
	url   string

	mu    sync.Mutex
	pairs []*websocket.Conn
}

func newFrameProxy(t testing.TB, upstream string) *frameProxy {
	t.Helper()
	p := &frameProxy{upstream: upstream}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: http.HandlerFunc(p.serve)}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close(); p.cut() })
	p.url = "ws://" + ln.Addr().String()
	return p
}

func (p *frameProxy) setHook(h func(toBroker bool, f *toolserver.Frame, b []byte, send func([]byte))) {
	p.hook.Store(&h)
}

// cut drops every connection through the proxy.
func (p *frameProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.pairs {
		c.CloseNow()
	}
	p.pairs = nil
}

func (p *frameProxy) serve(w http.ResponseWriter, r *http.Request) {
	down, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	down.SetReadLimit(-1)
	ctx := context.Background()
	up, _, err := websocket.Dial(ctx, p.upstream, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": r.Header["Authorization"]}})
	if err != nil {
		down.Close(websocket.StatusInternalError, "upstream")
		return
	}
	up.SetReadLimit(-1)
	p.conns.Add(1)
	p.mu.Lock()
	p.pairs = append(p.pairs, down, up)
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	relay := func(from, to *websocket.Conn, toBroker bool) {
		defer func() { done <- struct{}{} }()
		send := func(b []byte) { _ = to.Write(ctx, websocket.MessageBinary, b) }
		for {
			_, b, err := from.Read(ctx)
			if err != nil {
				return
			}
			h := p.hook.Load()
			f, ferr := toolserver.DecodeFrame(b)
			if h == nil || ferr != nil {
				send(b)
				continue
			}
			(*h)(toBroker, f, b, send)
		}
	}
	go relay(down, up, false)
	go relay(up, down, true)
	<-done
	down.CloseNow()
	up.CloseNow()
	<-done
}
