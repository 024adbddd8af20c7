package kube

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	authv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/airlockhq/airlock/grant"
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
// (when runtimeClass names one), the pod security profile the grant asks
// for (podSecurity, remote.pod_security: empty for restricted) and whether
// the namespace's Pod Security admission lets such pods in, and each
// permission the broker needs (SelfSubjectAccessReview).
func Doctor(ctx context.Context, c *Clients, t Target, runtimeClass, podSecurity string) []Finding {
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
	// userns pods, and pods of a grant's runtime class, are plain Pods
	// wherever warm pools are served.
	if sandbox && podSecurity != grant.PodSecurityUserns && runtimeClass == "" {
		_, err := c.Dynamic.Resource(TemplateResource).Namespace(t.Namespace).Get(ctx, t.Template, metav1.GetOptions{})
		add("SandboxTemplate "+t.Namespace+"/"+t.Template, err == nil, true, "%s", errText(err, "kubectl apply -f deploy/sandbox/"))
		_, err = c.Kube.CoreV1().Secrets(t.Namespace).Get(ctx, PoolSecret(t.Template), metav1.GetOptions{})
		add("Secret "+t.Namespace+"/"+PoolSecret(t.Template), err == nil, true, "%s", errText(err, "see docs/kubernetes.md, warm pools"))
	} else {
		pt, err := c.Kube.CoreV1().PodTemplates(t.Namespace).Get(ctx, t.Template, metav1.GetOptions{})
		add("PodTemplate "+t.Namespace+"/"+t.Template, err == nil, true, "%s", errText(err, "kubectl apply -f deploy/pods/podtemplate.yaml"))
		if err == nil && len(pt.Template.Spec.Containers) > 0 {
			// The broker refuses a tag (validateHands): say so before a session.
			img := pt.Template.Spec.Containers[0].Image
			detail := img
			ierr := grant.CheckImage(img)
			if ierr != nil {
				detail = ierr.Error() + ": the broker refuses it"
			}
			add("PodTemplate image", ierr == nil, true, "%s", detail)
		}
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
	out = append(out, podSecurityFindings(ctx, c, t, podSecurity, v.Major, v.Minor, sandbox)...)
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

// Pod Security admission's namespace labels.
const (
	labelPSAEnforce        = "pod-security.kubernetes.io/enforce"
	labelPSAEnforceVersion = "pod-security.kubernetes.io/enforce-version"
)

// podSecurityFindings say which pods the grant asks for and whether the
// namespace's Pod Security admission admits them, where the broker may
// read the namespace (deploy/rbac.yaml does not let it: the finding then
// says what label to look for). The restricted pod passes every level;
// the userns pod passes "baseline" from version 1.35 (which allows an
// unmasked /proc in a user-namespaced pod) and "privileged", and fails
// "restricted". The seccomp profile on the nodes cannot be seen from the
// API: the finding says where it must be.
func podSecurityFindings(ctx context.Context, c *Clients, t Target, podSecurity, major, minor string, sandbox bool) []Finding {
	if podSecurity == "" {
		podSecurity = grant.PodSecurityRestricted
	}
	name := "pod security " + podSecurity
	switch podSecurity {
	case grant.PodSecurityRestricted:
		return []Finding{{Name: name, OK: true, Required: true,
			Detail: "the hands' pods pass the restricted Pod Security Standard; under a runtime sharing the node's kernel (runc, crun) the native sandbox cannot start in them (remote.pod_security = \"userns\" or remote.runtime_class, see docs/kubernetes.md)"}}
	case grant.PodSecurityUserns:
	default:
		return []Finding{{Name: name, OK: false, Required: true, Detail: fmt.Sprintf("unknown: remote.pod_security is %q or %q", grant.PodSecurityRestricted, grant.PodSecurityUserns)}}
	}
	var out []Finding
	detail := []string{"user-namespaced pods (hostUsers: false, procMount: Unmasked, seccomp Localhost " + SeccompProfile + ")"}
	ok := true
	if sandbox {
		detail = append(detail, "as plain Pods: warm pools' pods are their SandboxTemplate's")
	}
	if mj, mn := serverVersion(major, minor); mj == 1 && mn < 33 {
		ok = false
		detail = append(detail, fmt.Sprintf("Kubernetes %s.%s: user namespaces are on by default from 1.33 (earlier, the UserNamespacesSupport and ProcMountType feature gates)", major, minor))
	}
	// The profile on the nodes cannot be seen from the API.
	detail = append(detail, "every node that may run the hands needs deploy/seccomp/hands.json at /var/lib/kubelet/seccomp/"+SeccompProfile+
		" (kubectl apply -f deploy/seccomp/installer.yaml; not checked: a node without it fails the pod's start)")
	out = append(out, Finding{Name: name, OK: ok, Required: true, Detail: strings.Join(detail, "; ")})

	ns, err := c.Kube.CoreV1().Namespaces().Get(ctx, t.Namespace, metav1.GetOptions{})
	label := "namespace " + t.Namespace + " admits them"
	want := fmt.Sprintf("label it %s=baseline (deploy/namespace-userns.yaml)", labelPSAEnforce)
	switch {
	case err != nil:
		out = append(out, Finding{Name: label, OK: false, Required: false,
			Detail: fmt.Sprintf("cannot tell (%s): the namespace's label %s must be baseline (version latest or v1.35 or later) or privileged", errReason(err), labelPSAEnforce)})
	default:
		level, ver := ns.Labels[labelPSAEnforce], ns.Labels[labelPSAEnforceVersion]
		shown := fmt.Sprintf("%s=%q", labelPSAEnforce, level)
		if ver != "" {
			shown += fmt.Sprintf(", %s=%q", labelPSAEnforceVersion, ver)
		}
		switch {
		case level == "restricted":
			out = append(out, Finding{Name: label, OK: false, Required: true, Detail: shown + ": the restricted standard refuses procMount: Unmasked; " + want})
		case level == "baseline" && !psaVersionAtLeast(ver, 1, 35):
			out = append(out, Finding{Name: label, OK: false, Required: true, Detail: shown + ": baseline allows procMount: Unmasked in a user-namespaced pod only from v1.35; label it " + labelPSAEnforceVersion + "=latest"})
		case level == "":
			out = append(out, Finding{Name: label, OK: true, Required: true, Detail: "no " + labelPSAEnforce + " label: the cluster's default level applies (privileged unless its admission configuration says otherwise); " + want})
		default:
			out = append(out, Finding{Name: label, OK: true, Required: true, Detail: shown})
		}
	}
	return out
}

// serverVersion parses a server's major and minor version ("1", "33+").
func serverVersion(major, minor string) (int, int) {
	mj, _ := strconv.Atoi(strings.TrimRight(major, "+"))
	mn, _ := strconv.Atoi(strings.TrimRight(minor, "+"))
	return mj, mn
}

// psaVersionAtLeast reports whether a Pod Security version label
// ("latest", "v1.35", empty for latest) is at least major.minor.
func psaVersionAtLeast(v string, major, minor int) bool {
	if v == "" || v == "latest" {
		return true
	}
	mj, mn, ok := strings.Cut(strings.TrimPrefix(v, "v"), ".")
	if !ok {
		return false
	}
	a, err1 := strconv.Atoi(mj)
	b, err2 := strconv.Atoi(mn)
	return err1 == nil && err2 == nil && (a > major || a == major && b >= minor)
}

// errReason is a short reason for a failed read.
func errReason(err error) string {
	switch {
	case apierrors.IsForbidden(err):
		return "the broker may not read namespaces"
	case apierrors.IsNotFound(err):
		return "no such namespace"
	default:
		return err.Error()
	}
}
