package kube

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSweepWithoutHostKeyKeepsSameNamedHostsBroker: where the system
// names no boot and pid namespace (hostKey is "": macOS, Windows, a Linux
// without /proc/sys/kernel/random/boot_id), a broker is labelled with its
// host name alone, and a broker on another machine that shares the name
// (two laptops called "macbook-pro.local" in one namespace) cannot be told
// from a dead broker of this host: its pid simply does not run here. The
// sweep must then keep its objects until their expiry, not delete a live
// session of another user's broker (its pod killed mid-call, its Secret,
// policy and workspace claim gone).
func TestSweepWithoutHostKeyKeepsSameNamedHostsBroker(t *testing.T) {
	defer func(f func() string) { hostKeyOf = f }(hostKeyOf)
	hostKeyOf = func() string { return "" }
	c := newCluster(t, false)
	ctx := context.Background()
	pid := deadBroker(t)
	pid = pid[strings.LastIndex(pid, "_")+1:]
	// The other machine's broker: this host's label (no key), a pid that
	// does not run here, an expiry an hour away.
	m := metav1.ObjectMeta{Name: "other-laptop", Namespace: testNS,
		Labels:      map[string]string{LabelManagedBy: ManagedBy, LabelBroker: hostLabel() + "_" + pid, LabelSession: "other-laptop"},
		Annotations: map[string]string{AnnotationExpiry: time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}}
	if _, err := c.kube.CoreV1().Secrets(testNS).Create(ctx, &corev1.Secret{ObjectMeta: m}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.kube.CoreV1().Pods(testNS).Create(ctx, &corev1.Pod{ObjectMeta: m}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.kube.NetworkingV1().NetworkPolicies(testNS).Create(ctx, &networkingv1.NetworkPolicy{ObjectMeta: m}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	removed, err := Sweep(ctx, c.clients, testNS, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 0 {
		t.Fatalf("removed %v: a broker of another machine with this host's name, before its expiry", removed)
	}
	// Its expiry still bounds it.
	m.Annotations[AnnotationExpiry] = time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	if _, err := c.kube.CoreV1().Secrets(testNS).Update(ctx, &corev1.Secret{ObjectMeta: m}, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if removed, err = Sweep(ctx, c.clients, testNS, false); err != nil || len(removed) != 1 || removed[0].Kind != "Secret" {
		t.Fatalf("after its expiry: removed %v, %v; want its Secret", removed, err)
	}
}
