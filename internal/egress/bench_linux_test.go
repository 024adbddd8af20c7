package egress_test

import (
	"io"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/egress"
)

// BenchmarkThroughputRatio alternates four 256 MiB transfers in every
// iteration, so load that comes and goes on a shared machine falls on all
// alike: a direct loopback copy; the same through the full path as a native
// sandbox has it (the forwarder PID 1 of a PID namespace of its own, as the
// sandbox's init is, handing each connection to the proxy, which splices
// it); the full path with a forwarder that is not (a payload that sends the
// proxy a socket of its own: copied through a buffer); and through a bare
// TCP relay (accept, dial, copy through a buffer, nothing else). It reports
// each one's throughput as a percentage of the direct copy's (the goal for
// the path is at least 80), and the direct copy's CPU time as a percentage
// of the path's, which holds up better than wall time when other work
// shares the machine.
func BenchmarkThroughputRatio(b *testing.B) {
	port, done := sink(b)
	opts := &egress.Options{Policy: loopbackPolicy{port: port}, Resolver: fixtureResolver{}}
	fwd := nestedStack(b, opts)
	handed := stack(b, opts)
	direct := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	relay := bareRelay(b, direct)
	var td, tp, th, tr, cd, cp time.Duration
	dial := func(addr string) net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	through := func(addr string) {
		c := dial(addr)
		if rep := socksConnect(b, c, "fixture.test", port); rep != 0 {
			b.Fatalf("REP %#x", rep)
		}
		push(b, c, done)
	}
	for b.Loop() {
		t0, c0 := time.Now(), cpuTime()
		push(b, dial(direct), done)
		t1, c1 := time.Now(), cpuTime()
		through(fwd)
		t2, c2 := time.Now(), cpuTime()
		through(handed)
		t3 := time.Now()
		push(b, dial(relay), done)
		td, tp, th, tr = td+t1.Sub(t0), tp+t2.Sub(t1), th+t3.Sub(t2), tr+time.Since(t3)
		cd, cp = cd+c1-c0, cp+c2-c1
	}
	mbs := func(d time.Duration) float64 { return float64(b.N) * benchBytes / 1e6 / d.Seconds() }
	b.ReportMetric(mbs(td), "direct-MB/s")
	b.ReportMetric(mbs(tp), "proxy-MB/s")
	b.ReportMetric(100*td.Seconds()/tp.Seconds(), "proxy-%")
	b.ReportMetric(100*td.Seconds()/th.Seconds(), "handed-%")
	b.ReportMetric(100*td.Seconds()/tr.Seconds(), "relay-%")
	if cp > 0 {
		b.ReportMetric(100*cd.Seconds()/cp.Seconds(), "proxy-cpu-%")
	}
}

// bareRelay listens on 127.0.0.1 and relays each connection to to, one way
// (the benchmark's direction), through a 256 KiB buffer.
func bareRelay(b *testing.B, to string) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				up, err := net.Dial("tcp", to)
				if err != nil {
					return
				}
				defer up.Close()
				io.CopyBuffer(struct{ io.Writer }{up}, struct{ io.Reader }{c}, make([]byte, 256<<10))
				up.(*net.TCPConn).CloseWrite()
				io.Copy(io.Discard, up)
			}()
		}
	}()
	return l.Addr().String()
}
