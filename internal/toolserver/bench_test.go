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

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandboxtest"
)

// BenchmarkCall compares one read_file through a broker session on the
// local native backend with the same call on hands over loopback WebSocket
// (the hands use the same native backend), and reports p50 and p99.
func BenchmarkCall(b *testing.B) {
	for _, mode := range []string{"local", "remote"} {
		b.Run(mode, func(b *testing.B) {
			w := newWorkspace(b)
			var backend sandbox.Backend = sandboxtest.Native(b)
			if mode == "remote" {
				_, url := inProcess(b, w)
				backend = remote(b, url, nil)
			}
			s := w.session(b, backend)
			args := json.RawMessage(`{"path":"a.txt"}`)
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				res, err := s.Call(context.Background(), "read_file", args)
				if err != nil || res.Class != "ok" {
					b.Fatalf("%v %+v", err, res)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[min(len(lat)-1, len(lat)*99/100)].Microseconds())/1000, "p99-ms")
		})
	}
}

// BenchmarkIdleToolServer reports the resident memory of a tool-server
// process holding one idle broker connection.
func BenchmarkIdleToolServer(b *testing.B) {
	w := newWorkspace(b)
	addr := freeAddr(b)
	c := startChild(b, addr, w.root)
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
