// Package kubereq is what a broker asks of the airlock-kube helper for
// one connection: the target and the grant's part of the hands' pod. It
// imports no Kubernetes client, so the airlock binary can build a request
// without linking one.
package kubereq

import (
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/airlockhq/airlock/grant"
)

// Scheme is the prefix of a Kubernetes remote target.
const Scheme = "kube://"

var dnsLabel = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`) })

// ParseTarget splits "kube://NAMESPACE/TEMPLATE", naming what is wrong.
func ParseTarget(s string) (namespace, template string, err error) {
	rest, ok := strings.CutPrefix(s, Scheme)
	if !ok {
		return "", "", fmt.Errorf("%q is not kube://NAMESPACE/TEMPLATE", s)
	}
	ns, tpl, ok := strings.Cut(rest, "/")
	if !ok || ns == "" || tpl == "" || strings.Contains(tpl, "/") {
		return "", "", fmt.Errorf("%q is not kube://NAMESPACE/TEMPLATE", s)
	}
	if len(ns) > 63 || !dnsLabel().MatchString(ns) {
		return "", "", fmt.Errorf("%q: namespace %q is not a DNS label (lower-case letters, digits and '-', at most 63)", s, ns)
	}
	if len(tpl) > 50 || !dnsLabel().MatchString(tpl) {
		return "", "", fmt.Errorf("%q: template %q is not a DNS label of at most 50 characters", s, tpl)
	}
	return ns, tpl, nil
}

// Mount is a granted path the hands' pod mounts at the same path.
type Mount struct {
	Path     string `json:"path"`
	Writable bool   `json:"writable,omitempty"`
}

// Request is one connection's hands: never a secret.
type Request struct {
	Target string  `json:"target"`
	Mounts []Mount `json:"mounts"`
	// Hosts are the grant's network.hosts: the pod's egress.
	Hosts []string `json:"hosts,omitempty"`
	// Memory, Tmp and FileSize are the grant's limits in bytes.
	Memory   int64 `json:"memory"`
	Tmp      int64 `json:"tmp"`
	FileSize int64 `json:"file_size"`
	// RuntimeClass is the pod's runtimeClassName; empty for the default.
	RuntimeClass string `json:"runtime_class,omitempty"`
	// WorkspaceSize, when set, asks for a PersistentVolumeClaim of this
	// size (a Kubernetes quantity) as the first path's volume, in the
	// StorageClass WorkspaceClass (empty: the cluster's default).
	WorkspaceSize  string `json:"workspace_size,omitempty"`
	WorkspaceClass string `json:"workspace_class,omitempty"`
}

// FromGrant is the request for g's hands at target.
func FromGrant(target string, g *grant.Grant) (Request, error) {
	if _, _, err := ParseTarget(target); err != nil {
		return Request{}, err
	}
	gr := g.Remote()
	r := Request{Target: target, Hosts: g.Hosts(), RuntimeClass: gr.RuntimeClass,
		WorkspaceSize: gr.WorkspaceSize, WorkspaceClass: gr.WorkspaceClass}
	for _, m := range g.Mounts() {
		p := m.Source
		if !m.Dir {
			p = path.Dir(p)
		}
		if !slices.ContainsFunc(r.Mounts, func(x Mount) bool { return x.Path == p }) {
			r.Mounts = append(r.Mounts, Mount{Path: p, Writable: m.Writable})
		}
	}
	l := g.LimitsFor("shell")
	r.Memory, r.Tmp, r.FileSize = l.Memory, l.Tmp, l.FileSize
	return r, nil
}

// Encode is the request as the helper's argument.
func (r Request) Encode() string {
	b, _ := json.Marshal(r)
	return string(b)
}

// Decode parses an encoded request.
func Decode(s string) (Request, error) {
	var r Request
	d := json.NewDecoder(strings.NewReader(s))
	d.DisallowUnknownFields()
	if err := d.Decode(&r); err != nil {
		return Request{}, fmt.Errorf("the hands request: %w", err)
	}
	if _, _, err := ParseTarget(r.Target); err != nil {
		return Request{}, err
	}
	if len(r.Mounts) == 0 {
		return Request{}, errors.New("the hands request names no path to mount")
	}
	return r, nil
}
