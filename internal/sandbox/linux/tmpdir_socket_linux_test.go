package linux_test

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/grant"
)

// TestTempDirSocketMadeLaterHidden: the host's temporary directory is the
// one $TMPDIR names too, where ssh-agent, VS Code and test servers make
// their Unix sockets, not only /tmp. A grant that holds it (TMPDIR=~/tmp,
// airlock run in the home directory; a build's TMPDIR in its project)
// hides it from the sandbox, so a socket a host program makes there after
// the grant was built (an ssh-agent started while airlock mcp runs) is not
// reached: the scan for sockets sees only those there when it runs, and a
// sandbox connected to the agent made later and had it sign with the
// user's keys (red team). Granting $TMPDIR itself is refused, as /tmp is.
func TestTempDirSocketMadeLaterHidden(t *testing.T) {
	T, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	py := "/usr/bin/python3"
	if _, err := os.Stat(py); err != nil {
		t.Skipf("no %s to connect with", py)
	}
	W := filepath.Join(T, "w")
	tmp := filepath.Join(W, "tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(W, "f"), []byte("FILE-OK"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", tmp)
	g, err := grant.FromFlags(W, grant.Flags{})
	if err != nil {
		t.Fatalf("a grant holding $TMPDIR: %v, want it built with $TMPDIR hidden", err)
	}
	if _, err := grant.FromFlags(W, grant.Flags{ReadWrite: []string{tmp}}); err == nil || !strings.Contains(err.Error(), "TMPDIR") {
		t.Errorf("granting $TMPDIR itself: %v, want a refusal naming $TMPDIR", err)
	}

	// An ssh-agent started after the grant was built.
	const canary = "CANARY-agent-7c41"
	dir := filepath.Join(tmp, "ssh-XXXXabcd")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "agent.1234")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte(canary))
			_ = c.Close()
		}
	}()
	script := `cat f; echo; ` + py + ` -c 'import socket,sys
s=socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
print(s.recv(100))' ` + sock + ` || echo NOT-REACHED`
	out, err := runInGrant(t, g, W, script)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "FILE-OK") {
		t.Fatalf("the sandbox could not read its tree:\n%s", out)
	}
	if strings.Contains(out, canary) || !strings.Contains(out, "NOT-REACHED") {
		t.Errorf("the sandbox reached a socket made in $TMPDIR after the grant was built:\n%s", out)
	}
}
