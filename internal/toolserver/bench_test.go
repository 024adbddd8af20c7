package toolserver_test

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/sandboxtest"
)

// BenchmarkCall compares one read_file through a broker session on the
// local native backend with the same call on hands over loopback WebSocket
// (the hands use the same native backend). Each iteration makes one call
// of each, alternating, so both see the same load; it reports the p50 and
// p99 of each.
func BenchmarkCall(b *testing.B) {
	w := newWorkspace(b)
	local := w.session(b, sandboxtest.Native(b))
	_, url := inProcess(b, w)
	remoteS := w.session(b, remote(b, url, nil))
	args := json.RawMessage(`{"path":"a.txt"}`)
	sessions := []*broker.Session{local, remoteS}
	lat := [2][]time.Duration{}
	b.ResetTimer()
	for i := range b.N {
		for j := range 2 {
			k := (i + j) % 2 // alternate which goes first
			start := time.Now()
			res, err := sessions[k].Call(context.Background(), "read_file", args)
			if err != nil || res.Class != "ok" {
				b.Fatalf("%v %+v", err, res)
			}
			lat[k] = append(lat[k], time.Since(start))
		}
	}
	b.StopTimer()
	for k, name := range []string{"local", "remote"} {
		l := lat[k]
		slices.Sort(l)
		b.ReportMetric(float64(l[len(l)/2].Microseconds())/1000, name+"-p50-ms")
		b.ReportMetric(float64(l[min(len(l)-1, len(l)*99/100)].Microseconds())/1000, name+"-p99-ms")
	}
}

// BenchmarkIdleToolServer reports the resident memory of a tool-server
// process holding one idle broker connection.
func BenchmarkIdleToolServer(b *testing.B) {
	w := newWorkspace(b)
	p := listenPort(b)
	addr := p.addr
	c := startChild(b, p, w.root)
	rb := remote(b, "ws://"+addr, nil)
	s := w.session(b, rb)
	if _, err := s.Call(context.Background(), "read_file", json.RawMessage(`{"path":"a.txt"}`)); err != nil {
		b.Fatal(err)
	}
	for range b.N {
		time.Sleep(time.Millisecond)
	}
	status, err := os.ReadFile("/proc/" + strconv.Itoa(c.cmd.Process.Pid) + "/status")
	if err != nil {
		b.Skipf("no /proc status: %v", err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.Atoi(f[1])
			b.ReportMetric(float64(kb)/1024, "idle-rss-MiB")
		}
	}
}
