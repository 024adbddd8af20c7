package kube

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ktesting "k8s.io/client-go/testing"
)

// TestReleaseSessionSparesAnObjectMadeSinceUnderTheName: ReleaseSession
// lists the session's pod, and before it deletes it the pod is gone and
// another party's made under its name. It must delete only the object it
// listed, by its UID, as the sweep does.
func TestReleaseSessionSparesAnObjectMadeSinceUnderTheName(t *testing.T) {
	c := newCluster(t, false)
	ctx := context.Background()
	const id = "0123456789ab"
	broker := BrokerID()
	old := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "airlock-" + id + "-abcd-1", Namespace: testNS, UID: "uid-old",
		Labels: map[string]string{LabelManagedBy: ManagedBy, LabelBroker: broker, LabelSession: id}}}
	if _, err := c.kube.CoreV1().Pods(testNS).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: old.Name, Namespace: testNS, UID: types.UID("uid-new")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.kube.PrependReactor("list", "pods", func(ktesting.Action) (bool, runtime.Object, error) {
		return true, &corev1.PodList{Items: []corev1.Pod{*old}}, nil
	})
	c.kube.PrependReactor("delete", "pods", func(a ktesting.Action) (bool, runtime.Object, error) {
		d := a.(ktesting.DeleteActionImpl)
		if pre := d.DeleteOptions.Preconditions; pre != nil && pre.UID != nil && *pre.UID != "uid-new" {
			return true, nil, apierrors.NewConflict(corev1.Resource("pods"), d.Name, nil)
		}
		return false, nil, nil
	})
	removed, err := ReleaseSession(ctx, c.clients, Target{Namespace: testNS, Template: "hands"}, id, broker, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 0 {
		t.Errorf("removed %v, want nothing: the pod it listed is gone", removed)
	}
	if _, err := c.kube.Tracker().Get(corev1.SchemeGroupVersion.WithResource("pods"), testNS, old.Name); err != nil {
		t.Errorf("the pod made since under the name is gone: %v", err)
	}
}
