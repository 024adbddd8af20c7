package kube

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/toolserver"
)

// readA runs a real read_file through the broker over b.
func readA(t *testing.T, c *cluster, b *toolserver.Backend) {
	t.Helper()
	s, err := broker.Open(&broker.Options{Grant: c.grant, Backend: b, RecordsDir: t.TempDir(), Pool: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := s.Call(ctx, "read_file", json.RawMessage(`{"path":"a.txt"}`))
	if err != nil || res.Class != broker.ClassOK || !strings.Contains(res.Output.Content, "alpha") {
		t.Fatalf("read_file: %v %+v", err, res)
	}
}

// left lists the session's objects still in the cluster, by kind.
func left(t *testing.T, c *cluster, session string) map[string][]string {
	t.Helper()
	ctx := context.Background()
	sel := metav1.ListOptions{LabelSelector: LabelSession + "=" + session}
	if session == "" {
		sel.LabelSelector = LabelManagedBy + "=" + ManagedBy
	}
	out := map[string][]string{}
	pods, err := c.kube.CoreV1().Pods(testNS).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		out["Pod"] = append(out["Pod"], p.Name)
	}
	secs, _ := c.kube.CoreV1().Secrets(testNS).List(ctx, sel)
	for _, s := range secs.Items {
		out["Secret"] = append(out["Secret"], s.Name)
	}
	nps, _ := c.kube.NetworkingV1().NetworkPolicies(testNS).List(ctx, sel)
	for _, n := range nps.Items {
		out["NetworkPolicy"] = append(out["NetworkPolicy"], n.Name)
	}
	cls, _ := c.dyn.Resource(ClaimResource).Namespace(testNS).List(ctx, sel)
	for _, u := range cls.Items {
		out["SandboxClaim"] = append(out["SandboxClaim"], u.GetName())
	}
	return out
}

// TestPodLifecycle: plain Pods. Acquire creates the Secret, policy and
// pod; the first call waits for the pod to be Ready and runs on it; a pod
// that dies is replaced and the session reconnects to the new one;
// Release deletes everything.
func TestPodLifecycle(t *testing.T) {
	c := newCluster(t, false)
	s := c.acquire(ModeAuto)
	if s.Mode() != ModePods {
		t.Fatalf("mode %q without the agent-sandbox API, want pods", s.Mode())
	}
	id := s.ID()
	want := map[string][]string{
		"Pod":           {"airlock-" + id + "-1"},
		"Secret":        {"airlock-" + id},
		"NetworkPolicy": {"airlock-" + id},
	}
	if d := cmp.Diff(want, left(t, c, id)); d != "" {
		t.Fatalf("after Acquire (-want +got):\n%s", d)
	}
	b := c.remote(s)
	first := c.waitStarted()
	readA(t, c, b)

	c.kill(first)
	second := c.waitStarted()
	if second == first {
		t.Fatalf("the dead pod %s was not replaced", first)
	}
	readA(t, c, b) // waits for the reconnect, within the call's context
	want["Pod"] = []string{second}
	if d := cmp.Diff(want, left(t, c, id)); d != "" {
		t.Fatalf("after the pod died (-want +got):\n%s", d)
	}

	b.Close()
	if err := s.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := left(t, c, id); len(got) != 0 {
		t.Fatalf("Release left %v", got)
	}
	if _, err := s.Dial(context.Background()); !errors.Is(err, ErrReleased) {
		t.Fatalf("Dial after Release: %v, want ErrReleased", err)
	}
}

// TestSandboxLifecycle: with the agent-sandbox API served, the session
// claims a warm pod with a SandboxClaim, runs its call there, claims again
// when the claimed sandbox is gone, and deletes its claim on Release.
func TestSandboxLifecycle(t *testing.T) {
	c := newCluster(t, true)
	s := c.acquire(ModeAuto)
	if s.Mode() != ModeSandbox {
		t.Fatalf("mode %q with the agent-sandbox API, want sandbox", s.Mode())
	}
	id := s.ID()
	if d := cmp.Diff(map[string][]string{"SandboxClaim": {"airlock-" + id + "-1"}}, left(t, c, id)); d != "" {
		t.Fatalf("after Acquire (-want +got):\n%s", d)
	}
	b := c.remote(s)
	first := c.waitStarted()
	readA(t, c, b)

	// The claim's sandbox is lost: the controller marks it, the hands die.
	ctx := context.Background()
	rc := c.dyn.Resource(ClaimResource).Namespace(testNS)
	u, err := rc.Get(ctx, first, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	u.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Expired", "status": "True"}}}
	if _, err := rc.Update(ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.kill(first)
	second := c.waitStarted()
	readA(t, c, b)
	if d := cmp.Diff(map[string][]string{"SandboxClaim": {second}}, left(t, c, id)); d != "" {
		t.Fatalf("after the sandbox was lost (-want +got):\n%s", d)
	}
	b.Close()
	if err := s.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if got := left(t, c, id); len(got) != 0 {
		t.Fatalf("Release left %v", got)
	}
}

// TestReleaseEndsAWaitingDial: a Dial waiting for a pod that never gets
// ready ends when the session is released, and nothing is left.
func TestReleaseEndsAWaitingDial(t *testing.T) {
	c := newCluster(t, false)
	c.stop() // no kubelet: the pod never gets ready
	s := c.acquire(ModePods)
	done := make(chan error, 1)
	go func() {
		_, err := s.Dial(context.Background())
		done <- err
	}()
	// Release waits for the Dial to let go of the session.
	if err := s.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Dial succeeded without a ready pod")
		}
	case <-time.After(time.Minute):
		t.Fatal("Dial still waits after Release")
	}
	if got := left(t, c, s.ID()); len(got) != 0 {
		t.Fatalf("Release left %v", got)
	}
}
