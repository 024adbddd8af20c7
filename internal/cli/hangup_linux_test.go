package cli

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHangupEndsSessionCleanly: SIGHUP (the terminal airlock runs in
// closes, an agent's supervisor hangs up) ends airlock call, mcp, serve,
// run and tool-server as SIGTERM does: the call in flight is cancelled,
// the session writes its own close record and the egress proxy's socket
// directory (a grant that names hosts) is removed. Left to Go's default, SIGHUP killed airlock at
// once: the session had no close record until a later airlock recovered
// it as "interrupted", and every hang-up left a directory in /dev/shm that
// nothing ever removed.
func TestHangupEndsSessionCleanly(t *testing.T) {
	airlock, err := exec.LookPath("airlock")
	if err != nil {
		t.Fatalf("the test binary is not on PATH as airlock: %v", err)
	}
	const command = `touch started; exec sleep 300`
	tests := []struct {
		name  string
		args  []string
		stdin string
	}{
		{"call", []string{"call", "--allow-host", "example.com", "shell", `{"command": "` + command + `"}`}, ""},
		{"mcp", []string{"mcp", "--allow-host", "example.com", "--shutdown-timeout", "100ms"}, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"shell","arguments":{"command":"` + command + `"}}}
`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			work, state := t.TempDir(), t.TempDir()
			cmd := exec.Command(airlock, tt.args...)
			cmd.Dir = work
			cmd.Env = append(os.Environ(), "AIRLOCK_STATE_DIR="+state)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			// stdin stays open until the test ends: an MCP client that has
			// not gone away.
			in, err := cmd.StdinPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan struct{})
			var waitErr error
			go func() { waitErr = cmd.Wait(); close(exited) }()
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				in.Close()
				<-exited
			})
			if _, err := io.WriteString(in, tt.stdin); err != nil {
				t.Fatal(err)
			}
			waitForFile(t, filepath.Join(work, "started"), exited, &stderr)
			sockets := unixSocketsOf(t, cmd.Process.Pid)
			if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
				t.Fatal(err)
			}
			<-exited
			err = waitErr
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
					t.Errorf("airlock %s died of %v instead of ending its session", tt.name, ws.Signal())
				}
			}
			if !hasCloseRecord(t, state) {
				t.Errorf("airlock %s wrote no close record for its session (stdout %q, stderr %q)", tt.name, stdout.String(), stderr.String())
			}
			for _, s := range sockets {
				if _, err := os.Lstat(filepath.Dir(s)); err == nil {
					t.Errorf("airlock %s left %s behind", tt.name, filepath.Dir(s))
					os.RemoveAll(filepath.Dir(s))
				}
			}
		})
	}
}

// waitForFile waits until path exists, failing when the process ends first.
func waitForFile(t *testing.T, path string, exited <-chan struct{}, stderr *bytes.Buffer) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		select {
		case <-exited:
			t.Fatalf("airlock ended before the call started; stderr %q", stderr.String())
		case <-tick.C:
		}
	}
}

// unixSocketsOf returns the paths of the named Unix sockets process pid
// holds open.
func unixSocketsOf(t *testing.T, pid int) []string {
	t.Helper()
	fds, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		t.Fatal(err)
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		l, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/" + fd.Name())
		if ino, ok := strings.CutPrefix(l, "socket:["); err == nil && ok {
			inodes[strings.TrimSuffix(ino, "]")] = true
		}
	}
	f, err := os.Open("/proc/net/unix")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// Num RefCount Protocol Flags Type St Inode Path
		fields := strings.Fields(sc.Text())
		if len(fields) == 8 && inodes[fields[6]] && strings.HasPrefix(fields[7], "/") {
			out = append(out, fields[7])
		}
	}
	if len(out) == 0 {
		t.Fatal("airlock holds no named Unix socket: found no egress proxy to check")
	}
	return out
}

// hasCloseRecord reports whether a session in the records directory
// state has a close record.
func hasCloseRecord(t *testing.T, state string) bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(state, "ses_*", "audit.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no session records in %s (%v)", state, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(`"decision":"close"`)) {
			return true
		}
	}
	return false
}

// TestToolServerHangup: SIGHUP stops airlock tool-server as SIGTERM does,
// closing its listener and its sandboxes in order; uncaught, it killed the
// process at once.
func TestToolServerHangup(t *testing.T) {
	airlock, err := exec.LookPath("airlock")
	if err != nil {
		t.Fatalf("the test binary is not on PATH as airlock: %v", err)
	}
	tok := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tok, []byte("0123456789abcdef0123"), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(airlock, "tool-server", "--root", t.TempDir(), "--listen", "127.0.0.1:0", "--token-file", tok)
	cmd.Env = append(os.Environ(), "AIRLOCK_STATE_DIR="+t.TempDir())
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	sc := bufio.NewScanner(stderr)
	var said strings.Builder
	for sc.Scan() {
		said.WriteString(sc.Text() + "\n")
		if strings.HasPrefix(sc.Text(), "airlock tool-server: listening on ") {
			break
		}
	}
	if err := cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	go io.Copy(io.Discard, stderr)
	err = cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			t.Errorf("airlock tool-server died of %v instead of stopping; stderr %q", ws.Signal(), said.String())
		}
	}
}
