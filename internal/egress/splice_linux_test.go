package egress_test

import (
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/egress"
)

// TestSpliceUsed pins that bytes of a byte-stream connection to the proxy's
// socket (a forwarder that copies, as the Podman backend's does) move with
// splice(2): in a fresh process (no pooled pipes yet), the pipes Go's splice
// uses appear while a transfer is in flight (verified by hand with strace -f
// -e splice as well). Wrapping a connection (a bufio.Reader, a counting
// reader) would silently fall back to copying through user space and fail
// this test. A connection the forwarder hands over is copied through a
// buffer instead; see TestForwarderHandsOver.
func TestSpliceUsed(t *testing.T) {
	if !inChild(t, "splice pipes in flight") {
		return
	}
	n := splicePipes(t, func(port int) func() (net.Conn, error) {
		sock, _, _ := proxyOnly(t, egress.Options{Policy: loopbackPolicy{port: port}, Resolver: fixtureResolver{}})
		return func() (net.Conn, error) { return net.Dial("unix", sock) }
	}, 10*time.Second)
	t.Logf("splice pipes in flight: %d", n)
	// Two copies are running, one per direction, and each holds a splice
	// pipe, two descriptors, while it runs or waits.
	if n < 4 {
		t.Fatalf("%d pipe descriptors appeared during a transfer, want 4: a copy is not using splice", n)
	}
}

// TestForwarderHandsOver pins that a tunnel through the forwarder crosses no
// Unix connection: while bytes flow, the only Unix socket open in this
// process (forwarder, proxy and both ends of the transfer) is the proxy's
// listener. A forwarder that copied would hold two more, its end of a
// connection to the proxy and the proxy's.
func TestForwarderHandsOver(t *testing.T) {
	if !inChild(t, "unix sockets now") {
		return
	}
	before := countFDs(t, "socket:")
	during := make(chan int, 1)
	port, _ := tcpServer(t, func(c net.Conn) {
		defer c.Close()
		io.CopyN(io.Discard, c, 1<<20)
		during <- countFDs(t, "socket:")
		io.Copy(io.Discard, c)
	})
	fwd := stack(t, &egress.Options{Policy: loopbackPolicy{port: port}, Resolver: fixtureResolver{}})
	c, err := net.Dial("tcp", fwd)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if rep := socksConnect(t, c, "fixture.test", port); rep != 0 {
		t.Fatalf("REP %#x", rep)
	}
	go func() {
		buf := make([]byte, 64<<10)
		for i := 0; i < 64; i++ {
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	}()
	n := <-during
	// Sockets opened since before: the sink's listener and its connection,
	// the forwarder's listener, the client, the proxy's end of the client's
	// connection and its upstream, and the proxy's Unix listener.
	// The forwarder closes its end of the hand-over connection just after
	// the hand-over, which a loaded machine may not have run yet; a
	// forwarder that copies keeps its two for as long as the tunnel is
	// open, and it stays open here.
	unix := unixSockets(t)
	for deadline := time.Now().Add(10 * time.Second); unix != 1 && time.Now().Before(deadline); unix = unixSockets(t) {
		time.Sleep(10 * time.Millisecond) //permit:time.Sleep (waiting for the forwarder to close its hand-over socket)
	}
	t.Logf("sockets opened: %d; unix sockets now: %d", n-before, unix)
	if unix != 1 {
		t.Fatalf("%d Unix sockets open during a transfer, want 1 (the proxy's listener): the forwarder copies instead of handing over", unix)
	}
}

// inChild reports whether this is the fresh child process t runs in,
// alone, so descriptors other tests hold are not counted. In the parent it
// runs the child, fails t unless the child passed and logged want, and
// returns false.
func inChild(t *testing.T, want string) bool {
	if os.Getenv("EGRESS_FD_CHILD") == t.Name() {
		return true
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), "EGRESS_FD_CHILD="+t.Name())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), want) {
		t.Fatalf("child did not measure:\n%s", out)
	}
	t.Logf("child:\n%s", out)
	return false
}

// countFDs counts this process's open descriptors whose link starts with prefix.
func countFDs(t *testing.T, prefix string) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if dst, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasPrefix(dst, prefix) {
			n++
		}
	}
	return n
}

// unixSockets counts this process's open Unix sockets, by their inodes in
// /proc/net/unix.
func unixSockets(t *testing.T) int {
	b, err := os.ReadFile("/proc/net/unix")
	if err != nil {
		t.Fatal(err)
	}
	inodes := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n")[1:] {
		if f := strings.Fields(line); len(f) >= 7 {
			inodes["socket:["+f[6]+"]"] = true
		}
	}
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if dst, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && inodes[dst] {
			n++
		}
	}
	return n
}
