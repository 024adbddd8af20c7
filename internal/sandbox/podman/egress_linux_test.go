package podman

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/egresstest"
)

// TestLiveEgress: through the Podman backend, a granted host is reached
// through the per-call proxy (the socket directory mounted in, the
// in-container forwarder, the proxy variables), and nothing else is: not
// a host the grant does not name, not the host's loopback directly.
func TestLiveEgress(t *testing.T) {
	b := newLive(t)
	t.Setenv("TMPDIR", t.TempDir())
	ca := egresstest.NewCA(t, "a.test", "b.test")
	a := egresstest.Serve(t, ca, "a.test", nil)
	bsrv := egresstest.Serve(t, ca, "b.test", nil)
	sentinel, hits := egresstest.Sentinel(t)
	ws, caDir := t.TempDir(), t.TempDir()
	caFile := ca.WriteFile(t, caDir)
	g, err := grant.Parse([]byte(fmt.Sprintf(`
[paths]
read_write = ["."]
read_only = [%q]
[network]
hosts = [%q]
private = [%q]
`, caDir, a.HostPort(), a.HostPort())), "egress.toml", ws)
	if err != nil {
		t.Fatal(err)
	}
	s, err := broker.Open(&broker.Options{Grant: g, Backend: b, RecordsDir: t.TempDir(),
		Egress: &broker.EgressOptions{Resolver: egresstest.NewResolver("a.test", "b.test"), Env: []string{"SSL_CERT_FILE=" + caFile}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	run := func(tool, args string) string {
		t.Helper()
		res, err := s.Call(context.Background(), tool, json.RawMessage(args))
		if err != nil {
			t.Fatalf("%s %s: %v", tool, args, err)
		}
		return res.Output.Content
	}
	if out := run("http_fetch", fmt.Sprintf(`{"url":%q}`, a.URL("/ok"))); !strings.Contains(out, "hello from a.test") {
		t.Errorf("granted host through the proxy: %q", out)
	}
	if out := run("http_fetch", fmt.Sprintf(`{"url":%q}`, a.URL("/redirect?to="+bsrv.URL("/ok")))); !strings.Contains(out, "refused by the egress proxy") {
		t.Errorf("redirect to a host not granted: %q", out)
	}
	// A client that ignores the proxy variables has no route out: the
	// container's 127.0.0.1 is its own.
	script := fmt.Sprintf(`{"command":"echo x | nc -w 2 127.0.0.1 %d; echo rc=$?; echo $HTTPS_PROXY"}`, sentinel)
	if out := run("shell", script); !strings.Contains(out, "http://127.0.0.1:") {
		t.Errorf("shell: %q, want the proxy variables set", out)
	}
	if n := hits(); n != 0 {
		t.Errorf("the host's loopback sentinel was reached %d times from the container", n)
	}
	if len(bsrv.Requests()) != 0 {
		t.Errorf("b.test, not granted, received %d requests", len(bsrv.Requests()))
	}
}

// TestLiveProxySocketAloneAndReadOnly: the container reaches the egress
// proxy's socket and nothing else of the host directory that holds it.
// The directory was mounted read-write (and idmapped, so container root
// was its owner): a call wrote 300 MB there, on the host, outside every
// grant, the tmp size and the disk guard, and could remove or replace
// the socket. As on the native backend, the socket alone is mounted,
// read-only; a connection through the forwarder still reaches it.
func TestLiveProxySocketAloneAndReadOnly(t *testing.T) {
	b := newLive(t)
	sockDir := t.TempDir()
	sock := filepath.Join(sockDir, "proxy.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	got := make(chan string, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		line, _ := bufio.NewReader(c).ReadString('\n')
		got <- line
	}()
	spec := baseSpec(t.TempDir())
	spec.Network.ProxySocket, spec.Network.ProxyPort = sock, 3128
	out, res := sh(t, b, spec, `echo through-the-proxy | nc -w 5 127.0.0.1 3128
s=$(find /.airlock -type s | head -1); d=$(dirname "$s"); echo "socket $s"
echo x > $d/planted 2>/dev/null && echo "wrote $d"
mkdir $d/planted-dir 2>/dev/null && echo "made a directory in $d"
dd if=/dev/zero of=$d/fill bs=1M count=8 2>/dev/null && echo "filled $d"
mv $s $s.x 2>/dev/null && echo "moved $s"
rm $s 2>/dev/null && echo "removed $s"
echo done`)
	if !strings.Contains(out, "socket /.airlock/") || !strings.Contains(out, "done") {
		t.Fatalf("the script did not run, or found no socket: %q %+v", out, res)
	}
	for _, bad := range []string{"wrote ", "made a directory", "removed ", "moved ", "filled "} {
		if strings.Contains(out, bad) {
			t.Errorf("the container changed the proxy's directory on the host:\n%s", out)
			break
		}
	}
	ents, err := os.ReadDir(sockDir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if fi, err := os.Lstat(sock); err != nil || fi.Mode()&os.ModeSocket == 0 || len(names) != 1 {
		t.Errorf("the proxy's directory on the host holds %v (socket: %v, %v), want the socket alone", names, fi, err)
	}
	select {
	case line := <-got:
		if line != "through-the-proxy\n" {
			t.Errorf("the proxy received %q", line)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("nothing reached the proxy's socket through the forwarder:\n%s", out)
	}
}
