package kube

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestStatusAddressIsAnIP: the address Dial connects to is what the
// cluster's status says, a pod's podIP or a claim's podIPs. A status that
// names anything but an IP (a host name, which the broker would resolve
// and dial on the network it runs in; a host with a port or a path, which
// would change the URL) is not an address of a pod: Dial waits on, it does
// not dial it.
func TestStatusAddressIsAnIP(t *testing.T) {
	for _, addr := range []string{
		"metadata.google.internal", "attacker.example", "10.0.0.1:22", "10.0.0.1/x?", "user@10.0.0.1", " 10.0.0.1", "fe80::1%eth0",
	} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Status: corev1.PodStatus{
			Phase: corev1.PodRunning, PodIP: addr,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		}}
		if ip, err := podState(p); ip != "" || err == nil {
			t.Errorf("pod status podIP %q: podState = %q, %v; want no address and an error", addr, ip, err)
		}
		u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "c"}}}
		_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"type": "Ready", "status": "True"}}, "status", "conditions")
		_ = unstructured.SetNestedStringSlice(u.Object, []string{addr}, "status", "sandbox", "podIPs")
		if ip, err := claimState(u); ip != "" || err == nil {
			t.Errorf("claim status podIPs %q: claimState = %q, %v; want no address and an error", addr, ip, err)
		}
	}
	for _, addr := range []string{"10.1.2.3", "2001:db8::7"} {
		p := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: addr,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
		if ip, err := podState(p); ip != addr || err != nil {
			t.Errorf("podIP %q: podState = %q, %v", addr, ip, err)
		}
	}
}
