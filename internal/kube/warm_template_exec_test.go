package kube

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestWarmTemplateNoCommandsOrNamesBesideTheToolServer: checkTemplate
// compared the warm pod's command, arguments, environment, volumes and
// security settings with the grant's, but a container runs other commands
// than its command (a lifecycle hook's or an exec probe's: each the image's
// airlock or shell, run beside the tool-server with the calls' workspace,
// the pool's Secret and the pod's egress, under no call's sandbox), and a
// pod's hostAliases or DNS settings (a nameserver, search domains) send a
// granted host name to another address than its own, which the tool-
// server's egress proxy then dials as the granted host. Each is refused,
// naming the SandboxTemplate, before anything is claimed.
func TestWarmTemplateNoCommandsOrNamesBesideTheToolServer(t *testing.T) {
	c := newCluster(t, true)
	ctx := context.Background()
	rc := c.dyn.Resource(TemplateResource).Namespace(testNS)
	orig, err := rc.Get(ctx, "hands", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	editContainer := func(f func(map[string]any)) func(*unstructured.Unstructured) {
		return func(u *unstructured.Unstructured) {
			cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "podTemplate", "spec", "containers")
			f(cs[0].(map[string]any))
			if err := unstructured.SetNestedSlice(u.Object, cs, "spec", "podTemplate", "spec", "containers"); err != nil {
				t.Fatal(err)
			}
		}
	}
	set := func(v any, path ...string) func(*unstructured.Unstructured) {
		return func(u *unstructured.Unstructured) {
			if err := unstructured.SetNestedField(u.Object, v, path...); err != nil {
				t.Fatal(err)
			}
		}
	}
	run := map[string]any{"exec": map[string]any{"command": []any{"/usr/local/bin/airlock", "tool-server", "--listen", "0.0.0.0:7444", "--allow-host", "*"}}}
	for _, tc := range []struct {
		name string
		edit func(*unstructured.Unstructured)
	}{
		{"a postStart hook", editContainer(func(c map[string]any) { c["lifecycle"] = map[string]any{"postStart": run} })},
		{"a preStop hook", editContainer(func(c map[string]any) { c["lifecycle"] = map[string]any{"preStop": run} })},
		{"an exec liveness probe", editContainer(func(c map[string]any) { c["livenessProbe"] = run })},
		{"an exec startup probe", editContainer(func(c map[string]any) { c["startupProbe"] = run })},
		{"an exec readiness probe", editContainer(func(c map[string]any) { c["readinessProbe"] = run })},
		{"host aliases", set([]any{map[string]any{"ip": "203.0.113.7", "hostnames": []any{"example.com"}}}, "spec", "podTemplate", "spec", "hostAliases")},
		{"a nameserver of the template's", func(u *unstructured.Unstructured) {
			set("None", "spec", "podTemplate", "spec", "dnsPolicy")(u)
			set(map[string]any{"nameservers": []any{"203.0.113.53"}}, "spec", "podTemplate", "spec", "dnsConfig")(u)
		}},
		{"search domains", set(map[string]any{"searches": []any{"exfil.example"}}, "spec", "podTemplate", "spec", "dnsConfig")},
		{"the node's resolver", set("Default", "spec", "podTemplate", "spec", "dnsPolicy")},
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
	// The template as SandboxTemplate makes it (its TCP readiness probe)
	// is still taken.
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
