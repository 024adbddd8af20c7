// Package kubereq is what a broker asks of the airlock-kube helper for
// each connection of its session, and at the session's end: the target,
// the session id and the grant's part of the hands' pod. It
// imports no Kubernetes client, so the airlock binary can build a request
// without linking one.
package kubereq

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/hostrule"
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
	Target string `json:"target"`
	// Session names the broker's session (NewSession): the broker picks it
	// once and gives it to every helper it spawns, so the session's Secret
	// and workspace claim outlive a connection. Empty: the connection is a
	// session of its own, released when it ends.
	Session string  `json:"session,omitempty"`
	Mounts  []Mount `json:"mounts"`
	// Hosts are the grant's network.hosts: the pod's egress to public
	// addresses.
	Hosts []string `json:"hosts,omitempty"`
	// Private are the grant's network.private entries: each IP or CIDR
	// gets an egress rule of its own (CheckPrivate says which names may
	// be among them).
	Private []string `json:"private,omitempty"`
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
	// AllowUnenforced is the grant's limits.unenforced = "allow": the
	// hands may run calls whose memory and process limits their pod gives
	// them no cgroup to enforce.
	AllowUnenforced bool `json:"allow_unenforced,omitempty"`
	// PodSecurity is the grant's remote.pod_security: empty or
	// grant.PodSecurityRestricted for a pod of the restricted standard,
	// grant.PodSecurityUserns for a user-namespaced one.
	PodSecurity string `json:"pod_security,omitempty"`
}

// FromGrant is the request for g's hands at target.
func FromGrant(target string, g *grant.Grant) (Request, error) {
	if _, _, err := ParseTarget(target); err != nil {
		return Request{}, err
	}
	gr := g.Remote()
	r := Request{Target: target, Hosts: g.NetworkHosts(), Private: g.NetworkPrivate(), RuntimeClass: gr.RuntimeClass,
		WorkspaceSize: gr.WorkspaceSize, WorkspaceClass: gr.WorkspaceClass, AllowUnenforced: g.AllowsUnenforcedLimits(), PodSecurity: gr.PodSecurity}
	if err := CheckPrivate(r.Private); err != nil {
		return Request{}, fmt.Errorf("%s: %w", target, err)
	}
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
	if r.Session != "" && !sessionID.MatchString(r.Session) {
		return Request{}, fmt.Errorf("the hands request's session %q is not %d lower-case hex digits", r.Session, sessionLen)
	}
	if err := CheckPrivate(r.Private); err != nil {
		return Request{}, err
	}
	switch r.PodSecurity {
	case "", grant.PodSecurityRestricted, grant.PodSecurityUserns:
	default:
		return Request{}, fmt.Errorf("the hands request's pod_security %q is not %q or %q", r.PodSecurity, grant.PodSecurityRestricted, grant.PodSecurityUserns)
	}
	return r, nil
}

// sessionLen is the length of a session id: 48 random bits in hex.
const sessionLen = 12

var sessionID = regexp.MustCompile(`^[0-9a-f]{12}$`)

// NewSession returns a random session id for Request.Session.
func NewSession() string {
	b := make([]byte, sessionLen/2)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// CheckPrivate refuses network.private entries the hands' NetworkPolicy
// cannot let out. An IP or a CIDR becomes an ipBlock peer on the ports the
// grant allows it (the entry's port; 80 and 443 without one). A name
// cannot be a peer: a NetworkPolicy names no hosts, and the grant trusts
// the name's DNS answers whatever addresses they are, so the only way to
// open it would be every address on its port, the cluster's pods and the
// node's metadata service included. A name is therefore let out only
// where an IP or CIDR entry lets its answers out, and a name on a port
// that no IP or CIDR entry opens is refused here: it could never be
// reached from the pod.
func CheckPrivate(private []string) error {
	open := map[int]bool{}
	var names []hostrule.Pattern
	for _, e := range private {
		p, err := hostrule.ParsePrivate(e)
		if err != nil {
			return fmt.Errorf("network.private %q: %w", e, err)
		}
		if p.Name() != "" {
			names = append(names, p)
			continue
		}
		for _, port := range Ports(p) {
			open[port] = true
		}
	}
	for _, p := range names {
		for _, port := range Ports(p) {
			if !open[port] {
				return fmt.Errorf("network.private %q is a name, and in Kubernetes the hands' NetworkPolicy lets private addresses out only by network.private's IPs and CIDRs "+
					"(a policy cannot name hosts, and opening every address on port %d would open the cluster's pods and the node's metadata service too); "+
					"none opens port %d: list the addresses it resolves to with that port, as \"10.1.2.3:%d\"", p.String(), port, port, port)
			}
		}
	}
	return nil
}

// Ports are the ports a host pattern allows: its own, or 80 and 443.
func Ports(p hostrule.Pattern) []int {
	if p.Port() != 0 {
		return []int{p.Port()}
	}
	return hostrule.DefaultPorts()
}
