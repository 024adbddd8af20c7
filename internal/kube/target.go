package kube

import (
	"fmt"
	"regexp"
	"strings"
)

// Scheme is the prefix of a Kubernetes remote target.
const Scheme = "kube://"

// Target names where the hands come from: a namespace and a template, a
// PodTemplate (plain Pods) or a SandboxTemplate (agent-sandbox) of that name.
type Target struct {
	Namespace string
	Template  string
}

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// ParseTarget parses "kube://NAMESPACE/TEMPLATE".
func ParseTarget(s string) (Target, error) {
	rest, ok := strings.CutPrefix(s, Scheme)
	if !ok {
		return Target{}, fmt.Errorf("%q is not kube://NAMESPACE/TEMPLATE", s)
	}
	ns, tpl, ok := strings.Cut(rest, "/")
	if !ok || ns == "" || tpl == "" || strings.Contains(tpl, "/") {
		return Target{}, fmt.Errorf("%q is not kube://NAMESPACE/TEMPLATE", s)
	}
	if len(ns) > 63 || !dnsLabel.MatchString(ns) {
		return Target{}, fmt.Errorf("%q: namespace %q is not a DNS label (lower-case letters, digits and '-', at most 63)", s, ns)
	}
	if len(tpl) > 50 || !dnsLabel.MatchString(tpl) {
		return Target{}, fmt.Errorf("%q: template %q is not a DNS label of at most 50 characters", s, tpl)
	}
	return Target{Namespace: ns, Template: tpl}, nil
}

func (t Target) String() string { return Scheme + t.Namespace + "/" + t.Template }
