package kube

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestPodTemplateImageMustBePinnedByDigest: the hands' pod runs the image
// the PodTemplate names, and that pod receives the calls' secrets and the
// workspace. A tag (or a bare name, or a malformed digest) lets whoever
// can push to the registry change what runs there; like the podman
// backend's image (grant.CheckImage), the template's image must be pinned
// by digest, or the session is refused naming the template and the fix,
// before any Secret, policy or pod is made.
func TestPodTemplateImageMustBePinnedByDigest(t *testing.T) {
	c := newCluster(t, false)
	ctx := context.Background()
	for _, img := range []string{
		"ghcr.io/airlockhq/airlock-hands:latest",
		"registry.example/airlock-hands",
		"registry.example/airlock-hands@sha256:0123",
	} {
		pt, err := c.kube.CoreV1().PodTemplates(testNS).Get(ctx, "hands", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pt.Template.Spec.Containers[0].Image = img
		if _, err := c.kube.CoreV1().PodTemplates(testNS).Update(ctx, pt, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		s, err := c.acquireWith(ModePods, nil)
		if err == nil {
			_ = s.Release(ctx)
			t.Errorf("image %q: the session was acquired, want it refused (not pinned by digest)", img)
			continue
		}
		if !strings.Contains(err.Error(), "pinned by digest") || !strings.Contains(err.Error(), "PodTemplate") {
			t.Errorf("image %q: %v, want an error naming the PodTemplate and the digest pin", img, err)
		}
		if l := left(t, c, ""); len(l) != 0 {
			t.Errorf("image %q: the refused session left %v", img, l)
		}
	}
}

// TestSandboxTemplateImageMustBePinnedByDigest: the same for warm pools:
// a claim binds a pod of the SandboxTemplate, which runs its image; a
// template whose image is a tag is refused, naming it, and nothing is
// claimed.
func TestSandboxTemplateImageMustBePinnedByDigest(t *testing.T) {
	c := newCluster(t, true)
	ctx := context.Background()
	rc := c.dyn.Resource(TemplateResource).Namespace(testNS)
	u, err := rc.Get(ctx, "hands", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.acquireWith(ModeSandbox, nil)
	if err != nil {
		t.Fatalf("a template pinned by digest: %v", err)
	}
	c.waitStarted() // the fake controller has served the claim
	if err := s.Release(ctx); err != nil {
		t.Fatal(err)
	}
	cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "podTemplate", "spec", "containers")
	cs[0].(map[string]any)["image"] = "ghcr.io/airlockhq/airlock-hands:latest"
	if err := unstructured.SetNestedSlice(u.Object, cs, "spec", "podTemplate", "spec", "containers"); err != nil {
		t.Fatal(err)
	}
	if _, err := rc.Update(ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	s, err = c.acquireWith(ModeSandbox, nil)
	if err == nil {
		_ = s.Release(ctx)
		t.Fatal("a SandboxTemplate whose image is a tag: the session was acquired, want it refused (not pinned by digest)")
	}
	if !strings.Contains(err.Error(), "pinned by digest") || !strings.Contains(err.Error(), "SandboxTemplate") {
		t.Errorf("%v, want an error naming the SandboxTemplate and the digest pin", err)
	}
	if l := left(t, c, ""); len(l) != 0 {
		t.Errorf("the refused session left %v", l)
	}
}

// TestDoctorNamesAnUnpinnedImage: the doctor says, before any session,
// that the broker will refuse the template's image.
func TestDoctorNamesAnUnpinnedImage(t *testing.T) {
	c := newCluster(t, false)
	ctx := context.Background()
	doctor := func() string {
		var out, errb strings.Builder
		mainWith(ctx, []string{"doctor", "kube://" + testNS + "/hands"}, nil, &out, &errb, func(string) string { return "" },
			func() (*Clients, error) { return c.clients, nil })
		return out.String() + errb.String()
	}
	if out := doctor(); !strings.Contains(out, "ok      PodTemplate image: registry.example/airlock-hands@sha256:") {
		t.Errorf("a pinned image: the report lacks it as ok:\n%s", out)
	}
	pt, err := c.kube.CoreV1().PodTemplates(testNS).Get(ctx, "hands", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pt.Template.Spec.Containers[0].Image = "ghcr.io/airlockhq/airlock-hands:latest"
	if _, err := c.kube.CoreV1().PodTemplates(testNS).Update(ctx, pt, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if out := doctor(); !strings.Contains(out, "MISSING PodTemplate image: image \"ghcr.io/airlockhq/airlock-hands:latest\" is not pinned by digest") {
		t.Errorf("a tag: the report lacks it as MISSING:\n%s", out)
	}
}
