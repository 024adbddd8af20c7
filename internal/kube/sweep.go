package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

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
	sweep := func(kind string, items []metav1.Object, remove func(name string, opts metav1.DeleteOptions) error) {
		for _, m := range items {
			why, ok := stale(m)
			if !ok {
				continue
			}
			// Only the object judged stale: one made since under its name
			// (a broker taking its session up again) has another UID, and
			// the API server refuses the delete with a conflict.
			err := remove(m.GetName(), onlyThis(m))
			switch {
			case apierrors.IsConflict(err):
				continue
			case err != nil && !apierrors.IsNotFound(err):
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
			sweep("SandboxClaim", ms, func(n string, o metav1.DeleteOptions) error { return rc.Delete(ctx, n, with(del, o)) })
		}
	}
	if l, err := core.Pods(namespace).List(ctx, sel); err != nil {
		errs = append(errs, fmt.Errorf("listing pods: %w", err))
	} else {
		var ms []metav1.Object
		for i := range l.Items {
			ms = append(ms, &l.Items[i])
		}
		sweep("Pod", ms, func(n string, o metav1.DeleteOptions) error {
			return core.Pods(namespace).Delete(ctx, n, with(metav1.DeleteOptions{GracePeriodSeconds: &zero}, o))
		})
	}
	if l, err := core.PersistentVolumeClaims(namespace).List(ctx, sel); err != nil {
		errs = append(errs, fmt.Errorf("listing PersistentVolumeClaims: %w", err))
	} else {
		var ms []metav1.Object
		for i := range l.Items {
			ms = append(ms, &l.Items[i])
		}
		sweep("PersistentVolumeClaim", ms, func(n string, o metav1.DeleteOptions) error {
			return core.PersistentVolumeClaims(namespace).Delete(ctx, n, with(del, o))
		})
	}
	if l, err := net.NetworkPolicies(namespace).List(ctx, sel); err != nil {
		errs = append(errs, fmt.Errorf("listing NetworkPolicies: %w", err))
	} else {
		var ms []metav1.Object
		for i := range l.Items {
			ms = append(ms, &l.Items[i])
		}
		sweep("NetworkPolicy", ms, func(n string, o metav1.DeleteOptions) error {
			return net.NetworkPolicies(namespace).Delete(ctx, n, with(del, o))
		})
	}
	if l, err := core.Secrets(namespace).List(ctx, sel); err != nil {
		errs = append(errs, fmt.Errorf("listing Secrets: %w", err))
	} else {
		var ms []metav1.Object
		for i := range l.Items {
			ms = append(ms, &l.Items[i])
		}
		sweep("Secret", ms, func(n string, o metav1.DeleteOptions) error {
			return core.Secrets(namespace).Delete(ctx, n, with(del, o))
		})
	}
	return out, errors.Join(errs...)
}

// onlyThis returns delete options whose preconditions name m's UID, so a
// delete removes m and not an object made since under its name. (Not its
// resource version: a pod's status changes it all the time.)
func onlyThis(m metav1.Object) metav1.DeleteOptions {
	var o metav1.DeleteOptions
	if uid := m.GetUID(); uid != "" {
		o.Preconditions = &metav1.Preconditions{UID: &uid}
	}
	return o
}

// withUID returns base with a precondition naming uid (none when uid is
// empty), so a delete removes the object of that UID and not one made
// since under its name.
func withUID(base metav1.DeleteOptions, uid types.UID) metav1.DeleteOptions {
	if uid != "" {
		base.Preconditions = &metav1.Preconditions{UID: &uid}
	}
	return base
}

// with returns base with the preconditions of o.
func with(base, o metav1.DeleteOptions) metav1.DeleteOptions {
	base.Preconditions = o.Preconditions
	return base
}
