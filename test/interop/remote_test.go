//go:build unix

package interop_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// childrenOf returns the pids of pid's children.
func childrenOf(pid int) []int {
	var out []int
	tasks, _ := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, s := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(s); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// toolServerChild returns the pid of pid's child running `airlock tool-server`, or 0.
func toolServerChild(pid int) int {
	for _, c := range childrenOf(pid) {
		b, _ := os.ReadFile("/proc/" + strconv.Itoa(c) + "/cmdline")
		if bytes.Contains(b, []byte("tool-server")) {
			return c
		}
	}
	return 0
}

func text(res *mcp.CallToolResult) string {
	if res == nil || len(res.Content) == 0 {
		return ""
	}
	if t, ok := res.Content[0].(*mcp.TextContent); ok {
		return t.Text
	}
	return ""
}

// TestMCPRemoteHandsCrash drives `airlock mcp --remote stdio:...` with the
// Go SDK client: the tool-server it spawned is killed (SIGKILL) during a
// shell call; the agent reads that the outcome is unknown, the command ran
// once, and the next calls run on hands spawned anew.
func TestMCPRemoteHandsCrash(t *testing.T) {
	needNative(t)
	w := newWorkspace(t)
	bin := airlock(t)
	hands := "stdio:" + bin + " tool-server --root " + w.root + " --heartbeat 200ms"
	cmd := exec.Command(bin, "mcp", "--root", w.root, "--remote", hands, "--remote-heartbeat", "200ms")
	cmd.Env = append(os.Environ(), "AIRLOCK_STATE_DIR="+w.records)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "go-client", Version: "1"}, nil).Connect(context.Background(),
		&mcp.IOTransport{Reader: stdout, Writer: stdin}, nil)
	if err != nil {
		t.Fatal(err)
	}
	read := func() {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "hello.txt"}})
		if err != nil || res.IsError || !strings.HasSuffix(text(res), "\nhello from interop\n") {
			t.Fatalf("read_file: %v %q", err, text(res))
		}
	}
	read()
	first := toolServerChild(cmd.Process.Pid)
	if first == 0 {
		t.Fatal("no tool-server child of airlock mcp")
	}
	// The hands get nothing of the broker's environment.
	if env, err := os.ReadFile("/proc/" + strconv.Itoa(first) + "/environ"); err != nil || bytes.Contains(env, []byte("AIRLOCK_STATE_DIR")) {
		t.Fatalf("the hands' environment (%v): %q", err, env)
	}
	got := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "shell", Arguments: map[string]any{"command": "echo run >> runs.log; sleep 600"}})
		if err != nil {
			t.Errorf("shell: %v", err)
		}
		got <- res
	}()
	eventually(t, 30*time.Second, "the command to run", func() bool {
		_, err := os.Stat(filepath.Join(w.root, "runs.log"))
		return err == nil
	})
	if err := syscall.Kill(first, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	res := <-got
	if !res.IsError || !strings.Contains(text(res), "the outcome is unknown") {
		t.Fatalf("the shell call across the crash: %q, want the outcome-unknown sentence", text(res))
	}
	read()
	if second := toolServerChild(cmd.Process.Pid); second == 0 || second == first {
		t.Fatalf("hands after the crash: pid %d (before: %d)", second, first)
	}
	if b, _ := os.ReadFile(filepath.Join(w.root, "runs.log")); string(b) != "run\n" {
		t.Fatalf("the command ran %d times", strings.Count(string(b), "run"))
	}
	if err := cs.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	classes, _, _ := auditClasses(t, w.records)
	if strings.Join(classes, ",") != "ok,lost,ok" {
		t.Errorf("audit classes %v, want ok, lost, ok", classes)
	}
	files, _ := filepath.Glob(filepath.Join(w.records, "*", "audit.jsonl"))
	for _, f := range files {
		b, _ := os.ReadFile(f)
		if !bytes.Contains(b, []byte(`"remote":"stdio:`+bin+" ")) {
			t.Errorf("the records do not name the remote hands:\n%s", b)
		}
	}
}

// startToolServer starts `airlock tool-server --listen` and returns its
// address (scheme://host:port) from the line it prints.
func startToolServer(t *testing.T, args ...string) string {
	t.Helper()
	cmd := exec.Command(airlock(t), append([]string{"tool-server"}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(stderr).ReadString('\n')
	m := regexp.MustCompile(`listening on (wss?://[0-9.:]+) as `).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("tool-server did not start: %q %v", line, err)
	}
	go func() { _, _ = bufio.NewReader(stderr).WriteTo(os.Stderr) }()
	return m[1]
}

// TestCallOverWebSocketTLS: `airlock call --remote wss://...` gives what a
// local call gives; a wrong token is refused at connect; plain ws:// off
// loopback is refused unless forced.
func TestCallOverWebSocketTLS(t *testing.T) {
	needNative(t)
	w := newWorkspace(t)
	dir := t.TempDir()
	cert, key, _ := selfSigned(t, dir)
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte("a-token-of-enough-length\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	url := startToolServer(t, "--root", w.root, "--listen", "127.0.0.1:0", "--token-file", tokenFile, "--tls-cert", cert, "--tls-key", key)
	if !strings.HasPrefix(url, "wss://") {
		t.Fatalf("address %s", url)
	}
	call := func(extra ...string) (string, error) {
		args := append([]string{"call", "--root", w.root}, extra...)
		args = append(args, "grep", `{"pattern":"interop","output_mode":"content"}`)
		c := exec.Command(airlock(t), args...)
		c.Env = append(os.Environ(), "AIRLOCK_STATE_DIR="+w.records)
		out, err := c.CombinedOutput()
		return string(out), err
	}
	local, err := call()
	if err != nil {
		t.Fatalf("local call: %v\n%s", err, local)
	}
	remote, err := call("--remote", url, "--remote-token-file", tokenFile, "--remote-ca", cert)
	if err != nil || remote != local {
		t.Fatalf("remote call: %v\n%s\nwant (local):\n%s", err, remote, local)
	}
	bad := filepath.Join(dir, "bad")
	os.WriteFile(bad, []byte("not-the-token-at-all"), 0o600)
	out, err := call("--remote", url, "--remote-token-file", bad, "--remote-ca", cert)
	if err == nil || !strings.Contains(out, "refused the token") {
		t.Fatalf("wrong token: %v\n%s", err, out)
	}
	c := exec.Command(airlock(t), "tool-server", "--root", w.root, "--listen", "0.0.0.0:0", "--token-file", tokenFile)
	out2, err := c.CombinedOutput()
	if err == nil || !strings.Contains(string(out2), "plain ws:// only on a loopback address") {
		t.Fatalf("plain ws on 0.0.0.0: %v\n%s", err, out2)
	}
}

// TestToolServerUnauthenticatedFlood: clients without the token open and
// hold more connections than `airlock tool-server --listen` keeps (each
// refused one after its 401, each silent one without a word); a broker with
// the token still connects and its call runs.
func TestToolServerUnauthenticatedFlood(t *testing.T) {
	needNative(t)
	w := newWorkspace(t)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("a-token-of-enough-length\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	url := startToolServer(t, "--root", w.root, "--listen", "127.0.0.1:0", "--token-file", tokenFile, "--max-connections", "8")
	addr := strings.TrimPrefix(url, "ws://")
	for i := range 40 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if i%2 == 0 {
			fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", addr) // refused: 401
		}
	}
	c := exec.Command(airlock(t), "call", "--root", w.root, "--remote", url, "--remote-token-file", tokenFile, "read_file", `{"path":"hello.txt"}`)
	c.Env = append(os.Environ(), "AIRLOCK_STATE_DIR="+w.records)
	out, err := c.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "hello from interop") {
		t.Fatalf("a call with the token while 40 connections without it are held: %v\n%s", err, out)
	}
}

// descendants returns pid's descendants, recursively.
func descendants(pid int) []int {
	var out []int
	for _, c := range childrenOf(pid) {
		out = append(out, c)
		out = append(out, descendants(c)...)
	}
	return out
}

// running reports whether a descendant of pid has argv exactly args.
func running(pid int, args ...string) bool {
	want := []byte(strings.Join(args, "\x00") + "\x00")
	for _, d := range descendants(pid) {
		if b, _ := os.ReadFile("/proc/" + strconv.Itoa(d) + "/cmdline"); bytes.Equal(b, want) {
			return true
		}
	}
	return false
}

// TestMCPRemoteCancel: an MCP cancel of a call on remote hands kills its
// sandbox there, and closing the session ends its remote background work.
func TestMCPRemoteCancel(t *testing.T) {
	needNative(t)
	w := newWorkspace(t)
	bin := airlock(t)
	cmd := exec.Command(bin, "mcp", "--root", w.root, "--remote", "stdio:"+bin+" tool-server --root "+w.root)
	cmd.Env = append(os.Environ(), "AIRLOCK_STATE_DIR="+w.records)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "go-client", Version: "1"}, nil).Connect(context.Background(),
		&mcp.IOTransport{Reader: stdout, Writer: stdin}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "shell", Arguments: map[string]any{"command": "exec sleep 601"}})
		done <- err
	}()
	eventually(t, 30*time.Second, "the command to run on the hands", func() bool { return running(cmd.Process.Pid, "sleep", "601") })
	cancel()
	<-done
	eventually(t, 30*time.Second, "the cancelled sandbox to go", func() bool { return !running(cmd.Process.Pid, "sleep", "601") })

	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "shell", Arguments: map[string]any{"command": "exec sleep 602", "run_in_background": true}})
	if err != nil || res.IsError {
		t.Fatalf("background start: %v %q", err, text(res))
	}
	eventually(t, 30*time.Second, "the background command to run on the hands", func() bool { return running(cmd.Process.Pid, "sleep", "602") })
	hands := toolServerChild(cmd.Process.Pid)
	if err := cs.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	cmd.Wait()
	eventually(t, 30*time.Second, "the background sandbox to go", func() bool {
		return !running(hands, "sleep", "602") && syscall.Kill(hands, 0) != nil
	})
	// The cancelled call's record may be written after the next call's:
	// the client stops waiting at once, the broker only when the hands
	// confirm the kill.
	classes, _, _ := auditClasses(t, w.records)
	if slices.Sort(classes); len(classes) != 2 || classes[0] != "cancelled" || classes[1] != "ok" {
		t.Errorf("audit classes %v, want cancelled and the background start (ok)", classes)
	}
}
