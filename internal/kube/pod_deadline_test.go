package kube

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/airlockhq/airlock/internal/kube/kubereq"
)

// TestNoPodOutlivesItsSessionsExpiry: every pod the session makes ends at
// the session's expiry (activeDeadlineSeconds), the bound on what a
// broker that crashed leaves running when no later connection sweeps the
// namespace. A pod that ends is replaced by Dial; once the session's
// expiry has passed (its TTL ran out: the kubelet ended its pod at the
// deadline) a replacement would have no deadline at all, a pod that runs
// until someone deletes it. The session makes none: Dial fails, naming
// the expiry.
func TestNoPodOutlivesItsSessionsExpiry(t *testing.T) {
	c := newCluster(t, false)
	r, err := kubereq.FromGrant("kube://"+testNS+"/hands", c.grant)
	if err != nil {
		t.Fatal(err)
	}
	h := HandsFor(r)
	h.Port = c.port
	s, err := Acquire(context.Background(), &Options{Target: Target{Namespace: testNS, Template: "hands"}, Clients: c.clients, Hands: h, Mode: ModePods, TTL: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release(context.Background())
	first := c.waitStarted()
	pods := c.kube.CoreV1().Pods(testNS)
	p, err := pods.Get(context.Background(), first, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p.Spec.ActiveDeadlineSeconds == nil {
		t.Fatalf("the first pod %s has no activeDeadlineSeconds", first)
	}
	// The TTL runs out; the kubelet ends the pod at its deadline.
	time.Sleep(time.Until(s.hands.Expires) + 100*time.Millisecond)
	c.kill(first)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, err := s.Dial(ctx)
	if err == nil {
		conn.Close()
	}
	l, lerr := pods.List(context.Background(), metav1.ListOptions{LabelSelector: LabelSession + "=" + s.ID()})
	if lerr != nil {
		t.Fatal(lerr)
	}
	for _, p := range l.Items {
		if p.Name != first && p.Spec.ActiveDeadlineSeconds == nil {
			t.Errorf("pod %s, made after the session's expiry, has no activeDeadlineSeconds: it runs until someone deletes it", p.Name)
		}
	}
	if err == nil {
		t.Error("Dial after the session's expiry connected to a new pod; want an error naming the expiry")
	}
}
