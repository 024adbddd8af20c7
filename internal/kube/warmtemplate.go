package kube

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/airlockhq/airlock/grant"
)

// checkTemplate refuses a SandboxTemplate whose warm pods would give the
// session h more than its grant. A warm pod is made before the session
// from the template alone: the hosts its tool-server's egress proxy lets
// out (its --allow-host and --allow-private), whether it runs calls with
// limits it cannot enforce, its NetworkPolicy and its pod's security
// settings are the template's, and a claim changes none of them. So the
// template must be no wider than what SandboxTemplate makes for h:
//
//   - the image pinned by digest (grant.CheckImage);
//   - one container, no init or ephemeral ones, running
//     /usr/local/bin/airlock tool-server with only the flags Args makes,
//     its hosts and private entries among the grant's, unenforced limits
//     only where the grant accepts them, and no environment;
//   - no command beside it: no lifecycle hook, no exec probe;
//   - each volume mounted once, the pool's Secret at its own directory;
//   - the cluster's DNS: no hostAliases, dnsConfig or other dnsPolicy;
//   - the pod's and the container's security contexts those of PodSpec,
//     none of the node's namespaces, no service-account token, and only
//     the pool's Secret and empty directories as volumes (a claim or a
//     hostPath would be shared with every other session, or the node);
//   - a NetworkPolicy whose ingress rules admit only brokers and whose
//     egress rules are each one of the grant's (NetworkPolicy).
//
// Fields this client does not know are refused too: they might widen it.
func checkTemplate(u *unstructured.Unstructured, h *Hands) error {
	var image string
	if cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "podTemplate", "spec", "containers"); len(cs) > 0 {
		if c, ok := cs[0].(map[string]any); ok {
			image, _ = c["image"].(string)
		}
	}
	if image == "" {
		return fmt.Errorf("its first container names no image")
	}
	if err := grant.CheckImage(image); err != nil {
		return fmt.Errorf("the warm pods' %w (a tag lets the registry change what runs with the calls' secrets)", err)
	}
	var bad []string
	hh := *h
	hh.Image = image
	hh.Secret = PoolSecret(h.Template)
	want := PodSpec(&hh)
	specObj, ok, _ := unstructured.NestedMap(u.Object, "spec", "podTemplate", "spec")
	if !ok {
		return fmt.Errorf("it has no spec.podTemplate.spec")
	}
	var spec corev1.PodSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(specObj, &spec, true); err != nil {
		return fmt.Errorf("its pod spec: %w", err)
	}
	bad = append(bad, podWider(&spec, &want, &hh)...)
	npObj, ok, _ := unstructured.NestedMap(u.Object, "spec", "networkPolicy")
	if !ok {
		bad = append(bad, "it has no networkPolicy (the warm pods' traffic would be the namespace's default)")
	} else {
		var np networkingv1.NetworkPolicySpec
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(npObj, &np, true); err != nil {
			return fmt.Errorf("its networkPolicy: %w", err)
		}
		bad = append(bad, policyWider(&np, &NetworkPolicy(&hh, "").Spec)...)
	}
	if len(bad) > 0 {
		return fmt.Errorf("its warm pods would give the session more than its grant: %s; make the template for this grant (kube.SandboxTemplate, deploy/sandbox/sandboxtemplate.yaml) or use plain Pods",
			strings.Join(bad, "; "))
	}
	return nil
}

// podWider names what of spec gives more than want, PodSpec's pod for h.
func podWider(spec, want *corev1.PodSpec, h *Hands) []string {
	var bad []string
	if len(spec.Containers) != 1 || len(spec.InitContainers) > 0 || len(spec.EphemeralContainers) > 0 {
		bad = append(bad, "containers other than the one hands container")
	}
	if spec.HostNetwork || spec.HostPID || spec.HostIPC {
		bad = append(bad, "the node's network, pid or IPC namespace")
	}
	// The pod's names resolve as the cluster's DNS has them: an alias or a
	// resolver of the template's would send a granted host's name, which
	// the tool-server's egress proxy resolves and dials, to another address.
	if len(spec.HostAliases) > 0 {
		bad = append(bad, "hostAliases (the pod's /etc/hosts would send a granted host's name elsewhere)")
	}
	if spec.DNSConfig != nil || (spec.DNSPolicy != "" && spec.DNSPolicy != corev1.DNSClusterFirst) {
		bad = append(bad, fmt.Sprintf("DNS settings of the template's (dnsPolicy %q, dnsConfig): a granted host's name would resolve elsewhere than through the cluster's DNS", spec.DNSPolicy))
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		bad = append(bad, "a service-account token (automountServiceAccountToken is not false)")
	}
	if !equality.Semantic.DeepEqual(spec.SecurityContext, want.SecurityContext) {
		bad = append(bad, "a pod securityContext other than the restricted one PodSpec makes")
	}
	for _, v := range spec.Volumes {
		switch {
		case v.Secret != nil && v.Secret.SecretName == h.Secret && v.Secret.Items == nil:
		case v.EmptyDir != nil:
		default:
			bad = append(bad, fmt.Sprintf("volume %q is neither the pool's Secret %s nor an empty directory", v.Name, h.Secret))
		}
	}
	if len(spec.Containers) == 0 {
		return bad
	}
	c, wc := &spec.Containers[0], &want.Containers[0]
	if !equality.Semantic.DeepEqual(c.SecurityContext, wc.SecurityContext) {
		bad = append(bad, "a container securityContext other than the restricted one PodSpec makes")
	}
	if !slices.Equal(c.Command, wc.Command) {
		bad = append(bad, fmt.Sprintf("command %q, not %q", c.Command, wc.Command))
	}
	for _, p := range c.Ports {
		if p.HostPort != 0 || p.HostIP != "" {
			bad = append(bad, fmt.Sprintf("port %d on the node's address (hostPort %d)", p.ContainerPort, p.HostPort))
		}
	}
	// Where the volumes are mounted: the pool's Secret only at the
	// tool-server's own directory (under a granted path every call would
	// read the pool's token and TLS key), and each volume once (the
	// tool-server's /tmp, with its records, mounted also under a granted
	// path would let a call rewrite them).
	secretVol := map[string]bool{}
	for _, v := range spec.Volumes {
		if v.Secret != nil {
			secretVol[v.Name] = true
		}
	}
	seen := map[string]bool{}
	for _, m := range c.VolumeMounts {
		if seen[m.Name] {
			bad = append(bad, fmt.Sprintf("volume %q mounted more than once", m.Name))
		}
		seen[m.Name] = true
		if secretVol[m.Name] && (m.MountPath != secretDir || m.SubPath != "" || m.SubPathExpr != "") {
			bad = append(bad, fmt.Sprintf("the pool's Secret mounted at %q, not (only) at %s", m.MountPath, secretDir))
		}
	}
	if len(c.Env) > 0 || len(c.EnvFrom) > 0 {
		bad = append(bad, "an environment")
	}
	// Only the tool-server runs in the pod: a hook or an exec probe runs
	// a command of the template's beside it, with the calls' workspace,
	// the pool's Secret and the pod's egress, in no call's sandbox.
	if c.Lifecycle != nil && (c.Lifecycle.PostStart != nil || c.Lifecycle.PreStop != nil) {
		bad = append(bad, "a lifecycle hook (a command beside the tool-server)")
	}
	for i, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		if p != nil && p.Exec != nil {
			bad = append(bad, fmt.Sprintf("an exec %s probe (a command beside the tool-server)", [...]string{"liveness", "readiness", "startup"}[i]))
		}
	}
	return append(bad, argsWider(c.Args, h)...)
}

// toolServerFlags are the tool-server flags Args makes, and whether each
// takes a value.
var toolServerFlags = map[string]bool{
	"listen": true, "token-file": true, "tls-cert": true, "tls-key": true, "records": true,
	"rw": true, "ro": true, "allow-host": true, "allow-private": true, "allow-unenforced-limits": false,
}

// argsWider names what of the tool-server's arguments gives more than h's
// grant: a flag Args never makes (a --grant file, --root), a host or
// private entry the grant does not name, unenforced limits it does not
// accept. The granted paths may differ: every call's mounts are checked
// against the broker's grant and the hands' both.
func argsWider(args []string, h *Hands) []string {
	if len(args) == 0 || args[0] != "tool-server" {
		return []string{fmt.Sprintf("arguments %q are not tool-server's", args)}
	}
	var bad []string
	for i := 1; i < len(args); i++ {
		a := args[i]
		name, val, hasVal := strings.Cut(strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-"), "=")
		takes, known := toolServerFlags[name]
		if !strings.HasPrefix(a, "-") || !known {
			bad = append(bad, fmt.Sprintf("tool-server argument %q, which the generated pod never has", a))
			continue
		}
		if takes && !hasVal {
			if i+1 == len(args) {
				bad = append(bad, fmt.Sprintf("tool-server flag %q without a value", a))
				break
			}
			i++
			val = args[i]
		}
		switch {
		case name == "allow-host" && !slices.Contains(h.Hosts, val):
			bad = append(bad, fmt.Sprintf("--allow-host %q, a host the grant does not name", val))
		case name == "allow-private" && !slices.Contains(h.Private, val):
			bad = append(bad, fmt.Sprintf("--allow-private %q, which the grant's network.private does not name", val))
		case name == "allow-unenforced-limits" && (hasVal || !h.AllowUnenforced):
			bad = append(bad, "--allow-unenforced-limits, which the grant does not accept")
		}
	}
	return bad
}

// policyWider names what of np lets more in or out than want, the
// session's NetworkPolicy: every ingress rule must name peers of want's
// (the brokers) and every egress rule must be one of want's.
func policyWider(np, want *networkingv1.NetworkPolicySpec) []string {
	var bad []string
	var peers []networkingv1.NetworkPolicyPeer
	for _, r := range want.Ingress {
		peers = append(peers, r.From...)
	}
	for _, r := range np.Ingress {
		if len(r.From) == 0 {
			bad = append(bad, "an ingress rule from every peer")
			continue
		}
		for _, p := range r.From {
			if !slices.ContainsFunc(peers, func(w networkingv1.NetworkPolicyPeer) bool { return equality.Semantic.DeepEqual(p, w) }) {
				bad = append(bad, "an ingress rule from a peer other than the brokers")
			}
		}
	}
	for _, r := range np.Egress {
		if !slices.ContainsFunc(want.Egress, func(w networkingv1.NetworkPolicyEgressRule) bool { return equality.Semantic.DeepEqual(r, w) }) {
			bad = append(bad, "an egress rule the grant's NetworkPolicy does not have")
		}
	}
	return bad
}
