package kube

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/airlockhq/airlock/internal/kube/kubereq"
)

// TestRuntimeClassNotDroppedByWarmPool: a grant's remote.runtime_class
// (gVisor, Kata: the stronger wall the grant asks for) is never dropped
// silently. A warm pool's pods are their SandboxTemplate's, made before
// the session, and a SandboxClaim names no runtime: so where the cluster
// serves agent-sandbox, the automatic mode picks plain Pods, whose
// runtimeClassName is the grant's, and an explicit agent-sandbox mode is
// refused naming the grant's key, before anything is made.
func TestRuntimeClassNotDroppedByWarmPool(t *testing.T) {
	c := newCluster(t, true)
	gvisor := func(r *kubereq.Request) { r.RuntimeClass = "gvisor" }
	if s, err := c.acquireWith(ModeSandbox, gvisor); err == nil || !strings.Contains(err.Error(), "remote.runtime_class") {
		if err == nil {
			_ = s.Release(context.Background())
		}
		t.Errorf("runtime class gvisor with agent-sandbox: %v, want an error naming remote.runtime_class", err)
	}
	if got := left(t, c, ""); len(got) != 0 {
		t.Errorf("the refused session left %v", got)
	}
	s, err := c.acquireWith(ModeAuto, gvisor)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Release(context.Background())
	if s.Mode() != ModePods {
		t.Fatalf("mode %q for a grant asking for runtime class gvisor: the warm pod runs under its template's runtime, not the grant's; want pods", s.Mode())
	}
	c.waitStarted()
	pods, err := c.kube.CoreV1().Pods(testNS).List(context.Background(), metav1.ListOptions{LabelSelector: LabelSession + "=" + s.ID()})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("pods %v: %v", pods, err)
	}
	if rc := pods.Items[0].Spec.RuntimeClassName; rc == nil || *rc != "gvisor" {
		t.Errorf("the session's pod has runtimeClassName %v, want gvisor", rc)
	}
}

// TestDoctorRuntimeClassChecksPodTemplate: the doctor, asked about a
// grant's runtime class where warm pools are served, checks what such a
// session uses: the PodTemplate of plain Pods, not the SandboxTemplate.
func TestDoctorRuntimeClassChecksPodTemplate(t *testing.T) {
	c := newCluster(t, true)
	var out, errb strings.Builder
	mainWith(context.Background(), []string{"doctor", "--runtime-class", "gvisor", "kube://" + testNS + "/hands"}, nil, &out, &errb,
		func(string) string { return "" }, func() (*Clients, error) { return c.clients, nil })
	if !strings.Contains(out.String(), "ok      PodTemplate "+testNS+"/hands") || strings.Contains(out.String(), "SandboxTemplate") {
		t.Errorf("doctor --runtime-class gvisor with warm pools served: want the PodTemplate checked, not the SandboxTemplate:\n%s%s", out.String(), errb.String())
	}
}
