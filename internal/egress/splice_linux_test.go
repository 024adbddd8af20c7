package egress_test

import (
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/internal/egress"
)

// pipeFDs counts this process's open pipe descriptors.
func pipeFDs(t *testing.T) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if dst, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasPrefix(dst, "pipe:") {
			n++
		}
	}
	return n
}

// TestSpliceUsed pins that bytes move through the forwarder and the proxy
// with splice(2): in a fresh process (no pooled pipes yet), the pipes Go's
// splice uses appear while a transfer is in flight (verified by hand with
// strace -f -e splice as well). Wrapping a connection
// (a bufio.Reader, a counting reader) would silently fall back to copying
// through user space and fail this test.
func TestSpliceUsed(t *testing.T) {
	if os.Getenv("EGRESS_SPLICE_CHILD") != "1" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSpliceUsed$", "-test.v", "-test.count=1")
		cmd.Env = append(os.Environ(), "EGRESS_SPLICE_CHILD=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), "splice pipes in flight") {
			t.Fatalf("child did not measure:\n%s", out)
		}
		t.Logf("child:\n%s", out)
		return
	}
	before := pipeFDs(t)
	during := make(chan int, 1)
	port, _ := tcpServer(t, func(c net.Conn) {
		defer c.Close()
		io.CopyN(io.Discard, c, 1<<20)
		during <- pipeFDs(t)
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
	t.Logf("splice pipes in flight: %d (before: %d)", n-before, before)
	// Four copies are running (two directions in the forwarder, two in the
	// proxy), and each holds a splice pipe, two descriptors, while it runs or
	// waits. Copying through user space in either component halves this.
	if n-before < 8 {
		t.Fatalf("%d pipe descriptors appeared during a transfer, want 8: a copy is not using splice", n-before)
	}
}
