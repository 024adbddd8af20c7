package kube

import (
	"context"
	"testing"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/containtest"
)

// TestContainment runs the containment suite against Kubernetes hands: a
// broker session over the hands of a plain Pod on the fake cluster, whose
// kubelet serves a tool-server (in this process) running each call in the
// native sandbox, capped by the suite's grant.
func TestContainment(t *testing.T) {
	containtest.Run(t, func(t *testing.T, g *grant.Grant) *broker.Session {
		c := newCluster(t, false)
		c.grant = g
		ks := c.acquire(ModePods)
		t.Cleanup(func() {
			if err := ks.Release(context.Background()); err != nil {
				t.Error(err)
			}
		})
		b := c.remote(ks)
		t.Cleanup(func() { b.Close() })
		s, err := broker.Open(&broker.Options{Grant: g, Backend: b, RecordsDir: t.TempDir(), Pool: -1})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}, nil)
}
