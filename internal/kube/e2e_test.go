package kube

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/kube/kubereq"
	"github.com/airlockhq/airlock/internal/toolserver"
)

// TestRealCluster runs a session against the cluster $KUBECONFIG names, at
// $AIRLOCK_KUBE_TARGET (default kube://airlock-hands/hands; apply deploy/
// first): a pod is made, a real call runs in it, and release leaves
// nothing. The broker must reach pod IPs (run it in the cluster, or on a
// node); it is skipped without a cluster.
func TestRealCluster(t *testing.T) {
	if os.Getenv("KUBECONFIG") == "" {
		t.Skip("KUBECONFIG is not set: no cluster to run the end-to-end test against")
	}
	target := os.Getenv("AIRLOCK_KUBE_TARGET")
	if target == "" {
		target = "kube://airlock-hands/hands"
	}
	tg, err := ParseTarget(target)
	if err != nil {
		t.Fatal(err)
	}
	c, err := LoadClients()
	if err != nil {
		t.Fatal(err)
	}
	g, err := grant.FromFlags("/workspace", grant.Flags{ReadWrite: []string{"/workspace"}})
	if err != nil {
		t.Fatal(err)
	}
	req, err := kubereq.FromGrant(target, g)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s, err := Acquire(ctx, &Options{Target: tg, Clients: c, Hands: HandsFor(req), TTL: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := s.Release(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	b, err := toolserver.New(ctx, &toolserver.Options{Endpoint: s.Endpoint(), Dial: s.Dial})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	bs, err := broker.Open(&broker.Options{Grant: g, Backend: b, RecordsDir: t.TempDir(), Pool: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer bs.Close()
	res, err := bs.Call(ctx, "shell", json.RawMessage(`{"command":"echo hands && id -u"}`))
	if err != nil || res.Class != broker.ClassOK {
		t.Fatalf("shell in the pod: %v %+v", err, res)
	}
	t.Logf("mode %s: %s", s.Mode(), res.Output.Content)
}
