package egress_test

import (
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/egress"
)

func memAvailable(t *testing.T) int64 {
	b, _ := os.ReadFile("/proc/meminfo")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "MemAvailable:") {
			f := strings.Fields(l)
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n << 10
		}
	}
	return 0
}

// TestFloodExperiment: a client floods an upstream that never reads; how
// much does the client get to write before its writes block?
func TestFloodExperiment(t *testing.T) {
	if os.Getenv("KFLOOD") == "" {
		t.Skip("experiment")
	}
	hold := make(chan net.Conn, 1)
	port, _ := tcpServer(t, func(c net.Conn) { hold <- c })
	fwd := stack(t, &egress.Options{Policy: loopbackPolicy{port: port}, Resolver: fixtureResolver{}, NoKernelRelay: os.Getenv("KOFF") != ""})
	c, err := net.Dial("tcp", fwd)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if rep := socksConnect(t, c, "fixture.test", port); rep != 0 {
		t.Fatalf("REP %#x", rep)
	}
	before := memAvailable(t)
	buf := make([]byte, 1<<20)
	var sent int64
	const max = 1 << 30
	for sent < max {
		c.SetWriteDeadline(time.Now().Add(2 * time.Second))
		n, err := c.Write(buf)
		sent += int64(n)
		if err != nil {
			break
		}
	}
	time.Sleep(500 * time.Millisecond)
	t.Logf("client wrote %d MiB before blocking (cap %d MiB); MemAvailable fell by %d MiB", sent>>20, max>>20, (before-memAvailable(t))>>20)
	sockstat, _ := os.ReadFile("/proc/net/sockstat")
	t.Logf("%s", sockstat)
}
