package kube

import (
	"context"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/kube/kubereq"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestWarmTemplateNoWiderThanGrant: a claimed warm pod is its
// SandboxTemplate's, made before the session: its tool-server's own grant
// (the container's arguments: the hosts its egress proxy lets out, a
// --grant file, unenforced limits), its NetworkPolicy and its pod's
// security settings are the template's, not the session's grant. A
// template wider than the grant (a host the grant does not name, egress
// open to every address, the node's network, a hostPath, a privileged
// container) gave the sandbox more than the grant. Each is refused, naming
// the SandboxTemplate, before anything is claimed.
func TestWarmTemplateNoWiderThanGrant(t *testing.T) {
	c := newCluster(t, true)
	ctx := context.Background()
	rc := c.dyn.Resource(TemplateResource).Namespace(testNS)
	orig, err := rc.Get(ctx, "hands", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	container := func(u *unstructured.Unstructured) map[string]any {
		cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "podTemplate", "spec", "containers")
		return cs[0].(map[string]any)
	}
	setContainer := func(u *unstructured.Unstructured, c map[string]any) {
		cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "podTemplate", "spec", "containers")
		cs[0] = c
		if err := unstructured.SetNestedSlice(u.Object, cs, "spec", "podTemplate", "spec", "containers"); err != nil {
			t.Fatal(err)
		}
	}
	addArgs := func(extra ...any) func(*unstructured.Unstructured) {
		return func(u *unstructured.Unstructured) {
			ct := container(u)
			ct["args"] = append(ct["args"].([]any), extra...)
			setContainer(u, ct)
		}
	}
	set := func(v any, path ...string) func(*unstructured.Unstructured) {
		return func(u *unstructured.Unstructured) {
			if err := unstructured.SetNestedField(u.Object, v, path...); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, tc := range []struct {
		name string
		edit func(*unstructured.Unstructured)
	}{
		{"a host the grant does not name", addArgs("--allow-host", "*.example.com")},
		{"a host in the flag=value form", addArgs("--allow-host=exfil.example.com")},
		{"a private address", addArgs("-allow-private", "10.0.0.0/8")},
		{"a grant file of the image's", addArgs("--grant", "/etc/airlock/wide.toml")},
		{"unenforced limits", addArgs("--allow-unenforced-limits")},
		{"egress to every address", set([]any{map[string]any{}}, "spec", "networkPolicy", "egress")},
		{"no NetworkPolicy", func(u *unstructured.Unstructured) { unstructured.RemoveNestedField(u.Object, "spec", "networkPolicy") }},
		{"ingress from every pod", set([]any{map[string]any{}}, "spec", "networkPolicy", "ingress")},
		{"the node's network", set(true, "spec", "podTemplate", "spec", "hostNetwork")},
		{"the node's pids", set(true, "spec", "podTemplate", "spec", "hostPID")},
		{"a service account token", set(true, "spec", "podTemplate", "spec", "automountServiceAccountToken")},
		{"a hostPath volume", func(u *unstructured.Unstructured) {
			vs, _, _ := unstructured.NestedSlice(u.Object, "spec", "podTemplate", "spec", "volumes")
			vs = append(vs, map[string]any{"name": "node", "hostPath": map[string]any{"path": "/"}})
			if err := unstructured.SetNestedSlice(u.Object, vs, "spec", "podTemplate", "spec", "volumes"); err != nil {
				t.Fatal(err)
			}
		}},
		{"a privileged container", func(u *unstructured.Unstructured) {
			ct := container(u)
			sc := ct["securityContext"].(map[string]any)
			sc["privileged"] = true
			sc["allowPrivilegeEscalation"] = true
			setContainer(u, ct)
		}},
		{"the tool-server on the node's address", func(u *unstructured.Unstructured) {
			ct := container(u)
			ct["ports"].([]any)[0].(map[string]any)["hostPort"] = int64(7443)
			setContainer(u, ct)
		}},
		{"capabilities kept", func(u *unstructured.Unstructured) {
			ct := container(u)
			delete(ct["securityContext"].(map[string]any), "capabilities")
			setContainer(u, ct)
		}},
		{"a second container", func(u *unstructured.Unstructured) {
			cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "podTemplate", "spec", "containers")
			cs = append(cs, map[string]any{"name": "side", "image": "registry.example/side@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"})
			if err := unstructured.SetNestedSlice(u.Object, cs, "spec", "podTemplate", "spec", "containers"); err != nil {
				t.Fatal(err)
			}
		}},
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
	// The template as SandboxTemplate makes it is taken.
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
	c.stopHands() // the fake controller leaves a released claim's hands
	// And one made for a grant with hosts, by the session of that grant.
	hosts := []string{"example.com", "*.pypi.org:8443"}
	st, err := SandboxTemplate(&Hands{Namespace: testNS, Template: "hands", Image: container(orig)["image"].(string),
		Mounts: []Mount{{Path: c.root, Writable: true}}, Limits: grant.DefaultLimits, Hosts: hosts})
	if err != nil {
		t.Fatal(err)
	}
	st.SetResourceVersion(orig.GetResourceVersion())
	if _, err := rc.Update(ctx, st, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	withHosts := func(r *kubereq.Request) { r.Hosts = hosts }
	if s, err = c.acquireWith(ModeSandbox, withHosts); err != nil {
		t.Fatalf("the template generated for a grant with hosts: %v", err)
	}
	c.waitStarted()
	if err := s.Release(ctx); err != nil {
		t.Fatal(err)
	}
	c.stopHands() // the fake controller leaves a released claim's hands
	// The same template for a grant without them gives more: refused.
	if s, err := c.acquireWith(ModeSandbox, nil); err == nil {
		_ = s.Release(ctx)
		t.Error("a template letting out hosts, for a grant naming none: acquired, want refused")
	}
}
