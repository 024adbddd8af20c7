package kube

import (
	"context"
	"fmt"

	authv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Finding is one line of Doctor's report.
type Finding struct {
	Name string `json:"name"`
	OK   bool   `json:"ok"`
	// Required findings that fail mean sessions cannot start.
	Required bool   `json:"required"`
	Detail   string `json:"detail,omitempty"`
}

// permission is one thing the broker must be allowed to do.
type permission struct {
	group, resource, verb string
	sandbox               bool // needed only with the agent-sandbox API
}

// Permissions are what the broker's RBAC must grant in the namespace
// (deploy/rbac.yaml grants exactly these).
var permissions = []permission{
	{"", "pods", "create", false}, {"", "pods", "get", false}, {"", "pods", "list", false},
	{"", "pods", "watch", false}, {"", "pods", "delete", false},
	{"", "secrets", "create", false}, {"", "secrets", "get", false}, {"", "secrets", "list", false}, {"", "secrets", "delete", false},
	{"", "secrets", "patch", false},
	{"", "podtemplates", "get", false},
	{"", "persistentvolumeclaims", "create", false}, {"", "persistentvolumeclaims", "get", false},
	{"", "persistentvolumeclaims", "list", false}, {"", "persistentvolumeclaims", "delete", false},
	{"", "persistentvolumeclaims", "patch", false},
	{"networking.k8s.io", "networkpolicies", "create", false}, {"networking.k8s.io", "networkpolicies", "list", false},
	{"networking.k8s.io", "networkpolicies", "delete", false}, {"networking.k8s.io", "networkpolicies", "patch", false},
	{SandboxGroupVersion.Group, "sandboxclaims", "create", true}, {SandboxGroupVersion.Group, "sandboxclaims", "get", true},
	{SandboxGroupVersion.Group, "sandboxclaims", "list", true}, {SandboxGroupVersion.Group, "sandboxclaims", "watch", true},
	{SandboxGroupVersion.Group, "sandboxclaims", "delete", true},
	{SandboxGroupVersion.Group, "sandboxtemplates", "get", true},
}

// Doctor reports what the cluster offers the target and what is missing:
// the API server, the agent-sandbox CRDs, the template, the RuntimeClass
// (when runtimeClass names one) and each permission the broker needs
// (SelfSubjectAccessReview).
func Doctor(ctx context.Context, c *Clients, t Target, runtimeClass string) []Finding {
	var out []Finding
	add := func(name string, ok, required bool, detail string, args ...any) {
		out = append(out, Finding{Name: name, OK: ok, Required: required, Detail: fmt.Sprintf(detail, args...)})
	}
	v, err := c.Kube.Discovery().ServerVersion()
	if err != nil {
		add("API server", false, true, "unreachable: %v", err)
		return out
	}
	add("API server", true, true, "Kubernetes %s", v.GitVersion)
	sandbox, err := HasSandboxAPI(c)
	switch {
	case err != nil:
		add("agent-sandbox API", false, false, "asking for %s: %v", SandboxGroupVersion, err)
	case sandbox:
		add("agent-sandbox API", true, false, "%s served: sessions claim warm pods from SandboxWarmPools", SandboxGroupVersion)
	default:
		add("agent-sandbox API", false, false, "%s not installed: sessions get plain Pods, one each (install kubernetes-sigs/agent-sandbox with its extensions for warm pools)", SandboxGroupVersion)
	}
	if sandbox {
		_, err := c.Dynamic.Resource(TemplateResource).Namespace(t.Namespace).Get(ctx, t.Template, metav1.GetOptions{})
		add("SandboxTemplate "+t.Namespace+"/"+t.Template, err == nil, true, "%s", errText(err, "kubectl apply -f deploy/sandbox/"))
		_, err = c.Kube.CoreV1().Secrets(t.Namespace).Get(ctx, PoolSecret(t.Template), metav1.GetOptions{})
		add("Secret "+t.Namespace+"/"+PoolSecret(t.Template), err == nil, true, "%s", errText(err, "see docs/kubernetes.md, warm pools"))
	} else {
		_, err := c.Kube.CoreV1().PodTemplates(t.Namespace).Get(ctx, t.Template, metav1.GetOptions{})
		add("PodTemplate "+t.Namespace+"/"+t.Template, err == nil, true, "%s", errText(err, "kubectl apply -f deploy/pods/podtemplate.yaml"))
	}
	if _, err := c.Kube.Discovery().ServerResourcesForGroupVersion("networking.k8s.io/v1"); err != nil {
		add("NetworkPolicy API", false, true, "networking.k8s.io/v1: %v", err)
	} else {
		add("NetworkPolicy API", true, true, "served (enforced only if the cluster's network plugin enforces policies)")
	}
	if runtimeClass != "" {
		_, err := c.Kube.NodeV1().RuntimeClasses().Get(ctx, runtimeClass, metav1.GetOptions{})
		add("RuntimeClass "+runtimeClass, err == nil, true, "%s", errText(err, "install the runtime (gVisor: runsc) and its RuntimeClass"))
	}
	for _, p := range permissions {
		if p.sandbox && !sandbox {
			continue
		}
		r, err := c.Kube.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authv1.SelfSubjectAccessReview{
			Spec: authv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authv1.ResourceAttributes{
				Namespace: t.Namespace, Group: p.group, Resource: p.resource, Verb: p.verb,
			}},
		}, metav1.CreateOptions{})
		name := "may " + p.verb + " " + p.resource
		switch {
		case err != nil:
			add(name, false, true, "asking: %v", err)
		case r.Status.Allowed:
			add(name, true, true, "")
		default:
			add(name, false, true, "denied in namespace %s (kubectl apply -f deploy/rbac.yaml) %s", t.Namespace, r.Status.Reason)
		}
	}
	return out
}

func errText(err error, fix string) string {
	switch {
	case err == nil:
		return "present"
	case apierrors.IsNotFound(err):
		return "missing: " + fix
	default:
		return err.Error()
	}
}
