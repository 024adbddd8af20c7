package grant

import (
	"path/filepath"
	"regexp"
	"strings"
	"sync"
)

// kubeName is a DNS label, as Kubernetes names namespaces and templates.
var kubeName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`) })

// kubeSubdomain is a DNS subdomain, as Kubernetes names StorageClasses.
var kubeSubdomain = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
})

// kubeSize is a Kubernetes quantity of bytes: a number and an optional
// binary (Ki, Mi, Gi, Ti, Pi, Ei) or decimal (k, M, G, T, P, E) suffix.
var kubeSize = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^([0-9]+(\.[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$`)
})

// Remote says where a session's sandboxes run when they are not on this
// host: remote hands (an `airlock tool-server`), from the grant's [remote]
// table. The zero Remote means the local sandbox.
type Remote struct {
	// Endpoint is "stdio:CMD ARGS...", "ws://HOST:PORT[/PATH]",
	// "wss://HOST:PORT[/PATH]" or "kube://NAMESPACE/TEMPLATE" (pods in a
	// Kubernetes cluster, see docs/kubernetes.md).
	Endpoint string
	// Token is where the WebSocket bearer token comes from, as a secret's
	// source: "env:VAR" or "file:/absolute/path". Never the token itself.
	Token string
	// CA is the PEM file of the CA that signed a wss:// endpoint's
	// certificate (absolute); empty means the system's roots.
	CA string
	// RuntimeClass is the runtimeClassName of a kube:// endpoint's pods
	// (gvisor, kata); empty for the template's or the cluster's default.
	RuntimeClass string
	// WorkspaceSize asks a kube:// endpoint's plain pods for a
	// PersistentVolumeClaim of this size (a Kubernetes quantity: "10Gi")
	// as the volume of the first granted path, one per session, kept
	// while the session's pods come and go; empty for an emptyDir.
	WorkspaceSize string
	// WorkspaceClass is that claim's storageClassName; empty for the
	// cluster's default StorageClass.
	WorkspaceClass string
	// PodSecurity is the security profile of a kube:// endpoint's pods:
	// PodSecurityRestricted (the default, also when empty) or
	// PodSecurityUserns (see docs/kubernetes.md).
	PodSecurity string
}

// The values of remote.pod_security.
const (
	// PodSecurityRestricted is a pod that passes the "restricted" Pod
	// Security Standard; the native sandbox cannot start in it under a
	// runtime that shares the node's kernel (runc, crun).
	PodSecurityRestricted = "restricted"
	// PodSecurityUserns is a user-namespaced pod (hostUsers: false) with an
	// unmasked /proc and airlock's own seccomp profile, in which the native
	// sandbox starts; it passes the "baseline" standard, not "restricted".
	PodSecurityUserns = "userns"
)

// Remote returns the grant's [remote] table; the zero Remote when it has none.
func (g *Grant) Remote() Remote { return g.remote }

// remoteFromTOML reads the [remote] table.
func remoteFromTOML(s *spec, v any, key []string, ps *problems) {
	str := func(dst *string) func(any, []string) { return stringField(ps, dst) }
	walkTable(v, key, ps, map[string]func(any, []string){
		"endpoint":        str(&s.remote.Endpoint),
		"token":           str(&s.remote.Token),
		"ca":              str(&s.remote.CA),
		"runtime_class":   str(&s.remote.RuntimeClass),
		"workspace_size":  str(&s.remote.WorkspaceSize),
		"workspace_class": str(&s.remote.WorkspaceClass),
		"pod_security":    str(&s.remote.PodSecurity),
	})
	s.remoteSet = true
}

// checkRemote validates the [remote] table against base (the directory
// relative paths start from).
func checkRemote(r Remote, base string, ps *problems) Remote {
	key := func(k string) []string { return []string{"remote", k} }
	ep := r.Endpoint
	switch {
	case ep == "":
		ps.add(key("endpoint"), "is required: \"stdio:CMD ARGS...\", \"ws://HOST:PORT\", \"wss://HOST:PORT\" or \"kube://NAMESPACE/TEMPLATE\"")
	case strings.HasPrefix(ep, "stdio:"):
		if strings.TrimSpace(ep[len("stdio:"):]) == "" {
			ps.add(key("endpoint"), "%q names no command", ep)
		}
		if r.Token != "" {
			ps.add(key("token"), "a stdio endpoint takes no token")
		}
	case strings.HasPrefix(ep, "ws://"), strings.HasPrefix(ep, "wss://"):
		if r.Token == "" {
			ps.add(key("token"), "is required for a WebSocket endpoint: \"env:VAR\" or \"file:PATH\"")
		}
	case strings.HasPrefix(ep, "kube://"):
		ns, tpl, ok := strings.Cut(ep[len("kube://"):], "/")
		if !ok || !kubeName().MatchString(ns) || len(ns) > 63 || !kubeName().MatchString(tpl) || len(tpl) > 50 {
			ps.add(key("endpoint"), "%q is not kube://NAMESPACE/TEMPLATE (each a DNS label: lower-case letters, digits and '-')", ep)
		}
		if r.Token != "" {
			ps.add(key("token"), "a kube endpoint takes no token: the broker makes one per session")
		}
		if r.CA != "" {
			ps.add(key("ca"), "a kube endpoint takes no CA: the broker makes one per session")
		}
	default:
		ps.add(key("endpoint"), "%q is not stdio:CMD, ws://HOST:PORT, wss://HOST:PORT or kube://NAMESPACE/TEMPLATE", ep)
	}
	if r.RuntimeClass != "" && (!strings.HasPrefix(ep, "kube://") || !kubeName().MatchString(r.RuntimeClass) || len(r.RuntimeClass) > 63) {
		ps.add(key("runtime_class"), "%q: only for a kube:// endpoint, and a DNS label", r.RuntimeClass)
	}
	kube := strings.HasPrefix(ep, "kube://")
	if r.WorkspaceSize != "" {
		m := kubeSize().FindStringSubmatch(r.WorkspaceSize)
		switch {
		case !kube:
			ps.add(key("workspace_size"), "%q: only for a kube:// endpoint", r.WorkspaceSize)
		case m == nil:
			ps.add(key("workspace_size"), "%q is not a Kubernetes quantity of bytes: a number and an optional Ki, Mi, Gi, Ti (or k, M, G, T) suffix, as \"10Gi\"", r.WorkspaceSize)
		case strings.Trim(m[1], "0.") == "":
			ps.add(key("workspace_size"), "%q: the workspace needs a size above zero", r.WorkspaceSize)
		}
	}
	if r.WorkspaceClass != "" {
		switch {
		case r.WorkspaceSize == "":
			ps.add(key("workspace_class"), "%q needs remote.workspace_size: the class is of the workspace's claim", r.WorkspaceClass)
		case !kubeSubdomain().MatchString(r.WorkspaceClass) || len(r.WorkspaceClass) > 253:
			ps.add(key("workspace_class"), "%q is not a StorageClass name (a DNS subdomain: lower-case letters, digits, '-' and '.')", r.WorkspaceClass)
		}
	}
	switch r.PodSecurity {
	case "":
	case PodSecurityRestricted, PodSecurityUserns:
		if !kube {
			ps.add(key("pod_security"), "%q: only for a kube:// endpoint", r.PodSecurity)
		}
	default:
		ps.add(key("pod_security"), "%q is not %q (the default: the restricted Pod Security Standard) or %q (a user-namespaced pod in which the native sandbox starts; needs a baseline namespace and airlock's seccomp profile on the nodes)",
			r.PodSecurity, PodSecurityRestricted, PodSecurityUserns)
	}
	switch {
	case r.Token == "":
	case strings.HasPrefix(r.Token, "env:") && validSecretName(r.Token[len("env:"):]):
	case strings.HasPrefix(r.Token, "file:") && len(r.Token) > len("file:"):
		p := r.Token[len("file:"):]
		if !filepath.IsAbs(p) {
			p = filepath.Join(base, p)
		}
		r.Token = "file:" + filepath.Clean(p)
	default:
		ps.add(key("token"), "%q is not \"env:VAR\" or \"file:PATH\" (the token itself never goes in a grant)", r.Token)
	}
	if r.CA != "" {
		if !filepath.IsAbs(r.CA) {
			r.CA = filepath.Join(base, r.CA)
		}
		r.CA = filepath.Clean(r.CA)
	}
	return r
}
