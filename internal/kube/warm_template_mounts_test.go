package kube

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestWarmTemplateMountsNoSecretOrRecordsIntoAGrantedPath: checkTemplate
// let a warm pod have only the pool's Secret and empty directories as
// volumes, but not where it mounts them: the Secret mounted a second time
// under a granted path gave every call the pool's token and TLS key, and
// the tool-server's /tmp (its records) mounted there let a call read and
// rewrite the records. A volume mounted twice, or the Secret anywhere but
// the tool-server's own directory, is refused.
func TestWarmTemplateMountsNoSecretOrRecordsIntoAGrantedPath(t *testing.T) {
	c := newCluster(t, true)
	ctx := context.Background()
	rc := c.dyn.Resource(TemplateResource).Namespace(testNS)
	orig, err := rc.Get(ctx, "hands", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mount := func(volume, at string) func(*unstructured.Unstructured) {
		return func(u *unstructured.Unstructured) {
			cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "podTemplate", "spec", "containers")
			ct := cs[0].(map[string]any)
			ct["volumeMounts"] = append(ct["volumeMounts"].([]any), map[string]any{"name": volume, "mountPath": at})
			if err := unstructured.SetNestedSlice(u.Object, cs, "spec", "podTemplate", "spec", "containers"); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		name string
		edit func(*unstructured.Unstructured)
	}{
		{"the pool's Secret under a granted path", mount("airlock-secret", filepath.Join(c.root, "leak"))},
		{"the records under a granted path", mount("tmp", filepath.Join(c.root, "records"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := orig.DeepCopy()
			tc.edit(u)
			if _, err := rc.Update(ctx, u, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			s, err := c.acquireWith(ModeSandbox, nil)
			if err == nil {
				_ = s.Release(ctx)
				t.Fatal("the session was acquired on the warm pool, want it refused: the warm pod would give the sandbox more than the grant")
			}
			if !strings.Contains(err.Error(), "SandboxTemplate") {
				t.Errorf("%v, want an error naming the SandboxTemplate", err)
			}
			if l := left(t, c, ""); len(l) != 0 {
				t.Errorf("the refused session left %v", l)
			}
		})
	}
	if _, err := rc.Update(ctx, orig, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	s, err := c.acquireWith(ModeSandbox, nil)
	if err != nil {
		t.Fatalf("the generated template: %v", err)
	}
	c.waitStarted()
	if err := s.Release(ctx); err != nil {
		t.Fatal(err)
	}
	c.stopHands()
}
