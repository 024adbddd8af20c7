package kube

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	ktesting "k8s.io/client-go/testing"
)

// TestReleaseSparesObjectsMadeSinceUnderTheNames: the session's pod,
// NetworkPolicy and Secret are gone (evicted, removed by hand) and
// another party made objects of its own under their names. Release
// deleted by name, so it removed the other party's objects; it must
// delete only the objects the session made, by their UIDs (which the API
// server checks, and a reactor here, as the fake clientset does not).
func TestReleaseSparesObjectsMadeSinceUnderTheNames(t *testing.T) {
	c := newCluster(t, false)
	ctx := context.Background()
	s := c.acquire(ModePods)
	c.waitStarted()
	for _, res := range []string{"pods", "secrets", "networkpolicies"} {
		c.kube.PrependReactor("delete", res, func(a ktesting.Action) (bool, runtime.Object, error) {
			d := a.(ktesting.DeleteActionImpl)
			pre := d.DeleteOptions.Preconditions
			if pre == nil || pre.UID == nil {
				return false, nil, nil
			}
			o, err := c.kube.Tracker().Get(d.GetResource(), d.GetNamespace(), d.Name)
			if err != nil {
				return false, nil, nil
			}
			if m, _ := meta.Accessor(o); m.GetUID() != *pre.UID {
				return true, nil, apierrors.NewConflict(d.GetResource().GroupResource(), d.Name, nil)
			}
			return false, nil, nil
		})
	}
	pod, secret := s.pod, s.secret.Name
	foreign := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: testNS, UID: types.UID("uid-foreign-" + name)}
	}
	tr := c.kube.Tracker()
	pods, secrets, policies := corev1.SchemeGroupVersion.WithResource("pods"), corev1.SchemeGroupVersion.WithResource("secrets"),
		networkingv1.SchemeGroupVersion.WithResource("networkpolicies")
	if err := tr.Delete(pods, testNS, pod); err != nil {
		t.Fatal(err)
	}
	if err := tr.Add(&corev1.Pod{ObjectMeta: foreign(pod)}); err != nil {
		t.Fatal(err)
	}
	if err := tr.Delete(policies, testNS, secret); err != nil {
		t.Fatal(err)
	}
	if err := tr.Add(&networkingv1.NetworkPolicy{ObjectMeta: foreign(secret)}); err != nil {
		t.Fatal(err)
	}
	if err := tr.Delete(secrets, testNS, secret); err != nil {
		t.Fatal(err)
	}
	if err := tr.Add(&corev1.Secret{ObjectMeta: foreign(secret)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := tr.Get(pods, testNS, pod); err != nil {
		t.Errorf("the pod another party made under the session's pod's name: %v", err)
	}
	if _, err := tr.Get(policies, testNS, secret); err != nil {
		t.Errorf("the NetworkPolicy another party made under the session's policy's name: %v", err)
	}
	if _, err := tr.Get(secrets, testNS, secret); err != nil {
		t.Errorf("the Secret another party made under the session's Secret's name: %v", err)
	}
}
