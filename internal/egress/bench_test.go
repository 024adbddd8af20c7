package egress_test

import (
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/egress"
)

const benchBytes = 256 << 20

// sink counts what each connection delivers and reports it on done.
func sink(t testing.TB) (port int, done chan int64) {
	done = make(chan int64, 16)
	port, _ = tcpServer(t, func(c net.Conn) {
		// Read in 256 KiB, like a real client; io.Discard's 8 KiB reads
		// would make the sink itself the bottleneck.
		buf := make([]byte, 256<<10)
		var n int64
		for {
			m, err := c.Read(buf)
			n += int64(m)
			if err != nil {
				break
			}
		}
		c.Close()
		done <- n
	})
	return port, done
}

// push writes benchBytes to c, half-closes and waits for the sink's count.
func push(b *testing.B, c net.Conn, done chan int64) {
	buf := make([]byte, 256<<10)
	for sent := 0; sent < benchBytes; sent += len(buf) {
		if _, err := c.Write(buf); err != nil {
			b.Fatal(err)
		}
	}
	c.(*net.TCPConn).CloseWrite()
	if n := <-done; n != benchBytes {
		b.Fatalf("sink got %d bytes, want %d", n, benchBytes)
	}
	c.Close()
}

// BenchmarkThroughput compares a loopback TCP copy with the same copy through
// the forwarder, the Unix socket and the proxy, so one run gives the ratio.
func BenchmarkThroughput(b *testing.B) {
	b.Run("direct", func(b *testing.B) {
		port, done := sink(b)
		b.SetBytes(benchBytes)
		defer reportCPU(b, cpuTime())
		for b.Loop() {
			c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
			if err != nil {
				b.Fatal(err)
			}
			push(b, c, done)
		}
	})
	b.Run("proxy", func(b *testing.B) {
		port, done := sink(b)
		fwd := stack(b, &egress.Options{Policy: loopbackPolicy{port: port}, Resolver: fixtureResolver{}})
		b.SetBytes(benchBytes)
		defer reportCPU(b, cpuTime())
		for b.Loop() {
			c, err := net.Dial("tcp", fwd)
			if err != nil {
				b.Fatal(err)
			}
			if rep := socksConnect(b, c, "fixture.test", port); rep != 0 {
				b.Fatalf("REP %#x", rep)
			}
			push(b, c, done)
		}
	})
}

// BenchmarkConnectLatency measures one SOCKS5 connect through forwarder and
// proxy to a loopback echo server, up to the first echoed byte.
func BenchmarkConnectLatency(b *testing.B) {
	port, _ := tcpServer(b, tcpEcho)
	fwd := stack(b, &egress.Options{Policy: loopbackPolicy{port: port}, Resolver: fixtureResolver{}})
	one := make([]byte, 1)
	for b.Loop() {
		c, err := net.Dial("tcp", fwd)
		if err != nil {
			b.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if rep := socksConnect(b, c, "fixture.test", port); rep != 0 {
			b.Fatalf("REP %#x", rep)
		}
		c.Write(one)
		if _, err := io.ReadFull(c, one); err != nil {
			b.Fatal(err)
		}
		c.Close()
	}
}

// reportCPU adds the process CPU time per MiB moved, a measure that holds
// when other work shares the machine and wall-clock throughput does not.
func reportCPU(b *testing.B, start time.Duration) {
	if used := cpuTime() - start; used > 0 {
		b.ReportMetric(float64(used.Nanoseconds())/float64(b.N)/(benchBytes>>20), "cpu-ns/MiB")
	}
}
