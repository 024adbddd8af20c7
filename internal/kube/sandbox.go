package kube

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// The agent-sandbox API (SIG Apps, kubernetes-sigs/agent-sandbox): a
// SandboxClaim binds a pre-warmed pod of a SandboxWarmPool made from a
// SandboxTemplate.
var (
	SandboxGroupVersion = schema.GroupVersion{Group: "extensions.agents.x-k8s.io", Version: "v1alpha1"}
	ClaimResource       = SandboxGroupVersion.WithResource("sandboxclaims")
	WarmPoolResource    = SandboxGroupVersion.WithResource("sandboxwarmpools")
	TemplateResource    = SandboxGroupVersion.WithResource("sandboxtemplates")
)

// PoolSecret is the Secret holding a warm pool's tool-server token and
// certificate (keys token, tls.crt, tls.key): a pod warmed before any
// session existed cannot mount a per-session Secret, so the pods of one
// pool share this one.
func PoolSecret(template string) string { return "airlock-pool-" + template }

// HasSandboxAPI reports whether the cluster serves SandboxClaims.
func HasSandboxAPI(c *Clients) (bool, error) {
	rl, err := c.Kube.Discovery().ServerResourcesForGroupVersion(SandboxGroupVersion.String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	for _, r := range rl.APIResources {
		if r.Name == ClaimResource.Resource {
			return true, nil
		}
	}
	return false, nil
}

func (s *Session) acquireClaim(ctx context.Context) error {
	ns, tpl := s.o.Target.Namespace, s.o.Target.Template
	if err := s.checkTemplate(ctx); err != nil {
		return err
	}
	name := PoolSecret(tpl)
	sec, err := s.c.Kube.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("no Secret %q in namespace %q: the warm pool's pods need their token and certificate (deploy/sandbox/README)", name, ns)
	}
	if err != nil {
		return fmt.Errorf("reading Secret %s/%s: %w", ns, name, err)
	}
	if s.creds, err = credentialsFrom(name, sec.Data); err != nil {
		return err
	}
	return s.createClaim(ctx)
}

// checkTemplate refuses a SandboxTemplate whose warm pods would give the
// session more than its grant (checkTemplate in warmtemplate.go): its
// image not pinned by digest, a host, policy or security setting wider
// than the grant's.
func (s *Session) checkTemplate(ctx context.Context) error {
	ns, tpl := s.o.Target.Namespace, s.o.Target.Template
	u, err := s.c.Dynamic.Resource(TemplateResource).Namespace(ns).Get(ctx, tpl, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("no SandboxTemplate %q in namespace %q: create the warm pool's template (deploy/sandbox/sandboxtemplate.yaml)", tpl, ns)
	}
	if err != nil {
		return fmt.Errorf("reading SandboxTemplate %s/%s: %w", ns, tpl, err)
	}
	if err := checkTemplate(u, &s.hands); err != nil {
		return fmt.Errorf("SandboxTemplate %s/%s: %w", ns, tpl, err)
	}
	return nil
}

// Claim is the session's SandboxClaim against template.
func Claim(h *Hands, name string) *unstructured.Unstructured {
	labels := map[string]any{}
	for k, v := range h.Labels() {
		labels[k] = v
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": SandboxGroupVersion.String(),
		"kind":       "SandboxClaim",
		"metadata": map[string]any{
			"name": name, "namespace": h.Namespace, "labels": labels,
			"annotations": map[string]any{AnnotationExpiry: h.Expires.UTC().Format(time.RFC3339)},
		},
		"spec": map[string]any{
			"sandboxTemplateRef": map[string]any{"name": h.Template},
			"lifecycle": map[string]any{
				"shutdownTime":   h.Expires.UTC().Format(time.RFC3339),
				"shutdownPolicy": "Delete",
			},
			"additionalPodMetadata": map[string]any{"labels": labels},
		},
	}}
}

func (s *Session) createClaim(ctx context.Context) error {
	s.pods++
	name := s.prefix + "-" + strconv.Itoa(s.pods)
	made, err := s.c.Dynamic.Resource(ClaimResource).Namespace(s.hands.Namespace).Create(ctx, Claim(&s.hands, name), metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating SandboxClaim %s: %w", name, err)
	}
	s.claim, s.claimUID = name, made.GetUID()
	s.log.Info("claimed hands from the warm pool", "namespace", s.hands.Namespace, "claim", name, "session", s.id)
	return nil
}

// claimAddr returns the claimed pod's IP once the claim is ready, making
// a new claim when it has gone or expired.
func (s *Session) claimAddr(ctx context.Context) (string, error) {
	for range 3 {
		if s.claim == "" {
			if err := s.createClaim(ctx); err != nil {
				return "", err
			}
		}
		ip, err := s.waitClaim(ctx, s.claim)
		if !errors.Is(err, errGone) {
			return ip, err
		}
		s.log.Warn("the claimed hands ended; claiming again", "claim", s.claim, "why", err)
		_ = s.c.Dynamic.Resource(ClaimResource).Namespace(s.hands.Namespace).Delete(ctx, s.claim, withUID(metav1.DeleteOptions{}, s.claimUID))
		s.claim = ""
	}
	return "", errors.New("three claims in a row ended before they were ready: see kubectl describe sandboxclaim -l " + LabelSession + "=" + s.id)
}

func (s *Session) waitClaim(ctx context.Context, name string) (string, error) {
	rc := s.c.Dynamic.Resource(ClaimResource).Namespace(s.hands.Namespace)
	w, err := rc.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		return "", fmt.Errorf("watching SandboxClaim %s: %w", name, err)
	}
	defer w.Stop()
	u, err := rc.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", fmt.Errorf("SandboxClaim %s was deleted: %w", name, errGone)
	}
	if err != nil {
		return "", fmt.Errorf("reading SandboxClaim %s: %w", name, err)
	}
	for {
		if u.GetUID() != s.claimUID {
			return "", fmt.Errorf("SandboxClaim %s (uid %s) is not the claim this session made (uid %s): another party replaced it; not dialling it (kubectl describe sandboxclaim -n %s %s)",
				name, u.GetUID(), s.claimUID, s.hands.Namespace, name)
		}
		if ip, err := claimState(u); ip != "" || err != nil {
			return ip, err
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("waiting for SandboxClaim %s to be ready: %w (kubectl describe sandboxclaim -n %s %s)", name, ctx.Err(), s.hands.Namespace, name)
		case ev, ok := <-w.ResultChan():
			if !ok {
				return "", fmt.Errorf("waiting for SandboxClaim %s: the watch ended", name)
			}
			nu, isU := ev.Object.(*unstructured.Unstructured)
			if !isU || nu.GetName() != name {
				continue
			}
			if ev.Type == watch.Deleted {
				return "", fmt.Errorf("SandboxClaim %s was deleted: %w", name, errGone)
			}
			u = nu
		}
	}
}

// claimState is the claimed pod's IP when the claim is Ready, errGone when
// the claim is being deleted or has expired.
func claimState(u *unstructured.Unstructured) (string, error) {
	if u.GetDeletionTimestamp() != nil {
		return "", fmt.Errorf("SandboxClaim %s is being deleted: %w", u.GetName(), errGone)
	}
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	ready := false
	for _, c := range conds {
		m, _ := c.(map[string]any)
		switch {
		case m["type"] == "Ready" && m["status"] == "True":
			ready = true
		case m["type"] == "Expired" && m["status"] == "True":
			return "", fmt.Errorf("SandboxClaim %s expired: %w", u.GetName(), errGone)
		case m["type"] == "Ready" && m["status"] == "False" && m["reason"] == "SandboxNotFound":
			return "", fmt.Errorf("SandboxClaim %s lost its sandbox: %w", u.GetName(), errGone)
		}
	}
	ips, _, _ := unstructured.NestedStringSlice(u.Object, "status", "sandbox", "podIPs")
	if ready && len(ips) > 0 && ips[0] != "" {
		if err := checkStatusIP(ips[0]); err != nil {
			return "", fmt.Errorf("SandboxClaim %s: %w", u.GetName(), err)
		}
		return ips[0], nil
	}
	return "", nil
}

// SandboxTemplate is the agent-sandbox SandboxTemplate for warm hands:
// PodSpec's pod, mounting the pool's Secret, and NetworkPolicy's rules.
func SandboxTemplate(h *Hands) (*unstructured.Unstructured, error) {
	hh := *h
	hh.Secret = PoolSecret(h.Template)
	spec, err := runtime.DefaultUnstructuredConverter.ToUnstructured(ptrTo(PodSpec(&hh)))
	if err != nil {
		return nil, err
	}
	np, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&NetworkPolicy(&hh, "").Spec)
	if err != nil {
		return nil, err
	}
	delete(np, "podSelector")
	delete(np, "policyTypes")
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": SandboxGroupVersion.String(),
		"kind":       "SandboxTemplate",
		"metadata":   map[string]any{"name": h.Template, "namespace": h.Namespace, "labels": map[string]any{LabelManagedBy: ManagedBy}},
		"spec": map[string]any{
			"podTemplate":   map[string]any{"metadata": map[string]any{"labels": map[string]any{LabelTemplate: h.Template}}, "spec": spec},
			"networkPolicy": np,
		},
	}}, nil
}

// WarmPool is the SandboxWarmPool keeping replicas of template's hands warm.
func WarmPool(namespace, template string, replicas int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": SandboxGroupVersion.String(),
		"kind":       "SandboxWarmPool",
		"metadata":   map[string]any{"name": template, "namespace": namespace, "labels": map[string]any{LabelManagedBy: ManagedBy}},
		"spec": map[string]any{
			"replicas":           replicas,
			"sandboxTemplateRef": map[string]any{"name": template},
		},
	}}
}

func ptrTo[T any](v T) *T { return &v }

// CreatePoolSecret makes (or replaces) the warm pool's Secret: a new
// random token and a certificate for ServerName valid for ttl.
func CreatePoolSecret(ctx context.Context, c *Clients, t Target, ttl time.Duration) error {
	cr, err := newCredentials(time.Now().Add(ttl))
	if err != nil {
		return err
	}
	name := PoolSecret(t.Template)
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: t.Namespace, Labels: map[string]string{LabelTemplate: t.Template}},
		Type:       corev1.SecretTypeOpaque,
		Data:       map[string][]byte{keyToken: []byte(cr.token), keyCert: cr.certPEM, keyKey: cr.keyPEM},
	}
	secrets := c.Kube.CoreV1().Secrets(t.Namespace)
	if err := secrets.Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("replacing Secret %s/%s: %w", t.Namespace, name, err)
	}
	if _, err := secrets.Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating Secret %s/%s: %w", t.Namespace, name, err)
	}
	return nil
}
