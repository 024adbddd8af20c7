package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/airlockhq/airlock/internal/procid"
)

// Leftover is an object Sweep removed, and why.
type Leftover struct {
	Kind, Name, Why string
}

// Sweep removes from namespace what brokers left: every object labelled
// app.kubernetes.io/managed-by=airlock whose expiry has passed, or whose
// broker ran on this host, in this pid namespace (hostLabel), and is gone. Objects of live brokers, and of
// other hosts' brokers before their expiry, are kept; where the host has
// no key to tell it from another of the same name (hostKey), only the
// expiry removes objects. claims says whether
// the cluster serves SandboxClaims.
func Sweep(ctx context.Context, c *Clients, namespace string, claims bool) ([]Leftover, error) {
	return sweep(ctx, c, namespace, claims, nil)
}

// sweep is Sweep, keeping also the objects keep names (the connecting
// broker's own session, which it is about to take up).
func sweep(ctx context.Context, c *Clients, namespace string, claims bool, keep func(metav1.Object) bool) ([]Leftover, error) {
	host := hostLabel()
	// Without a host key (hostKey: no boot id or pid namespace to read, as
	// on macOS and Windows) a broker of another machine that shares the
	// host name carries the same host label, and its pid, which does not
	// run here, would look dead: then only the expiry removes objects.
	keyed := hostKeyOf() != ""
	now := time.Now()
	var out []Leftover
	var errs []error
	stale := func(m metav1.Object) (string, bool) {
		if keep != nil && keep(m) {
			return "", false
		}
		if exp, err := time.Parse(time.RFC3339, m.GetAnnotations()[AnnotationExpiry]); err == nil && now.After(exp) {
			return "expired at " + exp.UTC().Format(time.RFC3339), true
		}
		b := m.GetLabels()[LabelBroker]
		h, id, ok := strings.Cut(b, "_")
		if ok && keyed && h == host && !procid.ID(id).Alive() {
			return "its broker (" + b + ") is gone", true
		}
		return "", false
	}
	sel := metav1.ListOptions{LabelSelector: LabelManagedBy + "=" + ManagedBy}
	zero := int64(0)
	bg := metav1.DeletePropagationBackground
	del := metav1.DeleteOptions{PropagationPolicy: &bg}
	sweep := func(kind string, items []metav1.Object, remove func(name string) error) {
		for _, m := range items {
			why, ok := stale(m)
			if !ok {
				continue
			}
			if err := remove(m.GetName()); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("removing %s %s: %w", kind, m.GetName(), err))
				continue
			}
			out = append(out, Leftover{Kind: kind, Name: m.GetName(), Why: why})
		}
	}
	core, net := c.Kube.CoreV1(), c.Kube.NetworkingV1()
	if claims {
		rc := c.Dynamic.Resource(ClaimResource).Namespace(namespace)
		l, err := rc.List(ctx, sel)
		if err != nil {
			errs = append(errs, fmt.Errorf("listing SandboxClaims: %w", err))
		} else {
			var ms []metav1.Object
			for i := range l.Items {
				ms = append(ms, &l.Items[i])
			}
			sweep("SandboxClaim", ms, func(n string) error { return rc.Delete(ctx, n, del) })
		}
	}
	if l, err := core.Pods(namespace).List(ctx, sel); err != nil {
		errs = append(errs, fmt.Errorf("listing pods: %w", err))
	} else {
		var ms []metav1.Object
		for i := range l.Items {
			ms = append(ms, &l.Items[i])
		}
		sweep("Pod", ms, func(n string) error {
			return core.Pods(namespace).Delete(ctx, n, metav1.DeleteOptions{GracePeriodSeconds: &zero})
		})
	}
	if l, err := core.PersistentVolumeClaims(namespace).List(ctx, sel); err != nil {
		errs = append(errs, fmt.Errorf("listing PersistentVolumeClaims: %w", err))
	} else {
		var ms []metav1.Object
		for i := range l.Items {
			ms = append(ms, &l.Items[i])
		}
		sweep("PersistentVolumeClaim", ms, func(n string) error { return core.PersistentVolumeClaims(namespace).Delete(ctx, n, del) })
	}
	if l, err := net.NetworkPolicies(namespace).List(ctx, sel); err != nil {
		errs = append(errs, fmt.Errorf("listing NetworkPolicies: %w", err))
	} else {
		var ms []metav1.Object
		for i := range l.Items {
			ms = append(ms, &l.Items[i])
		}
		sweep("NetworkPolicy", ms, func(n string) error { return net.NetworkPolicies(namespace).Delete(ctx, n, del) })
	}
	if l, err := core.Secrets(namespace).List(ctx, sel); err != nil {
		errs = append(errs, fmt.Errorf("listing Secrets: %w", err))
	} else {
		var ms []metav1.Object
		for i := range l.Items {
			ms = append(ms, &l.Items[i])
		}
		sweep("Secret", ms, func(n string) error { return core.Secrets(namespace).Delete(ctx, n, del) })
	}
	return out, errors.Join(errs...)
}
