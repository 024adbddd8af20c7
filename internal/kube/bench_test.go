package kube

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	ktesting "k8s.io/client-go/testing"

	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/kube/kubereq"
	"github.com/airlockhq/airlock/internal/toolserver"
)

// brokerActions are the API calls the broker made: the fake kubelet's and
// controller's own (reading the Secret, setting the status) left out.
func brokerActions(as []ktesting.Action) []string {
	var out []string
	for _, a := range as {
		if a.GetSubresource() == "status" || a.GetVerb() == "update" {
			continue
		}
		if a.GetVerb() == "get" && a.GetResource().Resource == "secrets" {
			continue // the kubelet mounting it
		}
		out = append(out, a.GetVerb()+" "+a.GetResource().Resource)
	}
	return out
}

// BenchmarkSessionToFirstCall measures, against the fake cluster, the
// time from opening a session on kube hands to its first tool call
// answered (Acquire, the pod's creation and readiness, the TLS WebSocket,
// a read_file in the hands' real sandbox) and its release; and counts the
// API calls of one session.
func BenchmarkSessionToFirstCall(b *testing.B) {
	for _, mode := range []Mode{ModePods, ModeSandbox} {
		b.Run(string(mode), func(b *testing.B) {
			c := newCluster(b, mode == ModeSandbox)
			ctx := context.Background()
			var calls, n int
			var phases [4]time.Duration
			for b.Loop() {
				k0, d0 := len(c.kube.Actions()), len(c.dyn.Actions())
				t0 := time.Now()
				s := c.acquire(mode)
				t1 := time.Now()
				tb, err := toolserver.New(ctx, &toolserver.Options{Endpoint: s.Endpoint(), Dial: s.Dial, Heartbeat: 200 * time.Millisecond})
				if err != nil {
					b.Fatal(err)
				}
				bs, err := broker.Open(&broker.Options{Grant: c.grant, Backend: tb, RecordsDir: b.TempDir(), Pool: -1})
				if err != nil {
					b.Fatal(err)
				}
				t2 := time.Now()
				res, err := bs.Call(ctx, "read_file", json.RawMessage(`{"path":"a.txt"}`))
				if err != nil || res.Class != broker.ClassOK {
					b.Fatalf("read_file: %v %+v", err, res)
				}
				t3 := time.Now()
				bs.Close()
				tb.Close()
				if err := s.Release(ctx); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				for i, d := range []time.Duration{t1.Sub(t0), t2.Sub(t1), t3.Sub(t2), time.Since(t3)} {
					phases[i] += d
				}
				n++
				<-c.started
				acts := brokerActions(c.kube.Actions()[k0:])
				acts = append(acts, brokerActions(c.dyn.Actions()[d0:])...)
				calls = len(acts)
				if n == 1 {
					b.Logf("API calls of one %s session: %s", mode, strings.Join(acts, ", "))
				}
				c.stopHands()
				b.StartTimer()
			}
			b.ReportMetric(float64(calls), "api-calls/session")
			for i, name := range []string{"acquire", "ready+connect", "first-call", "release"} {
				b.ReportMetric(float64(phases[i].Microseconds())/float64(n)/1000, name+"-ms")
			}
		})
	}
}

// TestAirlockBinaryLinksNoKubernetesClient: client-go stays in the
// airlock-kube helper; the airlock binary, which every sandbox re-executes,
// must not pay for its initialisation.
func TestAirlockBinaryLinksNoKubernetesClient(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	for _, pkg := range []string{"github.com/airlockhq/airlock/cmd/airlock", "github.com/airlockhq/airlock"} {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			if strings.HasPrefix(dep, "k8s.io/") || dep == "github.com/airlockhq/airlock/internal/kube" {
				t.Errorf("%s links %s", pkg, dep)
			}
		}
	}
}

// BenchmarkReconnect measures, through the helper with the broker's
// session id and a workspace claim, the time from a pod's death after its
// connection is up to the next call answered on the new pod: the lost
// link, the new helper's sweep, its reuse of the Secret and claim, the new
// pod, the TLS WebSocket and the hands' sandbox.
func BenchmarkReconnect(b *testing.B) {
	c := newCluster(b, false)
	bs, o := newBrokerSession(b, c, func(r *kubereq.Request) { r.WorkspaceSize = "1Gi" }, func(int) ConnectOptions {
		return ConnectOptions{Clients: c.clients, Port: c.port, Broker: BrokerID()}
	})
	ctx := context.Background()
	tb, err := toolserver.New(ctx, o)
	if err != nil {
		b.Fatal(err)
	}
	defer tb.Close()
	bs2, err := broker.Open(&broker.Options{Grant: c.grant, Backend: tb, RecordsDir: b.TempDir(), Pool: -1})
	if err != nil {
		b.Fatal(err)
	}
	defer bs2.Close()
	call := func() {
		res, err := bs2.Call(ctx, "read_file", json.RawMessage(`{"path":"a.txt"}`))
		if err != nil || res.Class != broker.ClassOK {
			b.Fatalf("read_file: %v %+v", err, res)
		}
	}
	cur := c.waitStarted()
	call()
	for b.Loop() {
		c.kill(cur)
		<-bs.done
		cur = c.waitStarted()
		call()
	}
}
