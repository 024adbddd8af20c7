package kube

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ktesting "k8s.io/client-go/testing"
)

// TestSweepSparesAnObjectMadeSinceUnderTheName: the sweep lists a dead
// broker's pod, and before it deletes it the pod is gone and another made
// under its name (a broker taking its session up again). The sweep must
// delete only the object it judged, by its UID, and leave the new one,
// as the API server does with a UID precondition (which the fake
// clientset does not check: a reactor does here, as the server would).
func TestSweepSparesAnObjectMadeSinceUnderTheName(t *testing.T) {
	c := newCluster(t, false)
	ctx := context.Background()
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	meta := func(uid, broker string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: "taken-up", Namespace: testNS, UID: types.UID(uid),
			Labels:      map[string]string{LabelManagedBy: ManagedBy, LabelBroker: broker, LabelSession: "taken-up"},
			Annotations: map[string]string{AnnotationExpiry: future}}
	}
	old := &corev1.Pod{ObjectMeta: meta("uid-old", deadBroker(t))}
	// What the cluster holds by the time the sweep deletes: the new pod.
	if _, err := c.kube.CoreV1().Pods(testNS).Create(ctx, &corev1.Pod{ObjectMeta: meta("uid-new", BrokerID())}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// What the sweep's list saw a moment before: the old one.
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
	removed, err := Sweep(ctx, c.clients, testNS, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 0 {
		t.Errorf("removed %v, want nothing: the pod it judged is gone", removed)
	}
	if _, err := c.kube.Tracker().Get(corev1.SchemeGroupVersion.WithResource("pods"), testNS, "taken-up"); err != nil {
		t.Errorf("the pod made since under the name is gone: %v", err)
	}
}
