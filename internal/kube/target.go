package kube

import "github.com/airlockhq/airlock/internal/kube/kubereq"

// Scheme is the prefix of a Kubernetes remote target.
const Scheme = kubereq.Scheme

// Target names where the hands come from: a namespace and a template, a
// PodTemplate (plain Pods) or a SandboxTemplate (agent-sandbox) of that name.
type Target struct {
	Namespace string
	Template  string
}

// ParseTarget parses "kube://NAMESPACE/TEMPLATE".
func ParseTarget(s string) (Target, error) {
	ns, tpl, err := kubereq.ParseTarget(s)
	return Target{Namespace: ns, Template: tpl}, err
}

func (t Target) String() string { return Scheme + t.Namespace + "/" + t.Template }
