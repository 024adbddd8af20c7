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
	"io"
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
	if err := r.Check(); err != nil {
		return Request{}, fmt.Errorf("%s: %w", target, err)
	}
	return r, nil
}

// Encode is the request as the helper's argument.
func (r Request) Encode() string {
	b, _ := json.Marshal(r)
	return string(b)
}

// MaxEncoded bounds an encoded request: a grant's paths and hosts fit in
// far less, and the helper refuses to parse more.
const MaxEncoded = 64 << 10

// SecretDir is where the hands' pod mounts its Secret: no granted path may
// be it, under it or above it.
const SecretDir = "/run/airlock"

// Decode parses an encoded request: one JSON object of at most MaxEncoded
// bytes with no unknown field, every value one the hands' pod can be made
// of (Check).
func Decode(s string) (Request, error) {
	if len(s) > MaxEncoded {
		return Request{}, fmt.Errorf("the hands request is %d bytes, more than %d", len(s), MaxEncoded)
	}
	var r Request
	d := json.NewDecoder(strings.NewReader(s))
	d.DisallowUnknownFields()
	if err := d.Decode(&r); err != nil {
		return Request{}, fmt.Errorf("the hands request: %w", err)
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return Request{}, errors.New("the hands request holds more than one JSON value")
	}
	if err := r.Check(); err != nil {
		return Request{}, err
	}
	return r, nil
}

// Compiled on first use: every airlock process imports this package.
var (
	dnsSubdomain = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	})
	quantity = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9]+(\.[0-9]+)?([KMGTPE]i|[kMGTPE])?$`) })
)

// Check refuses a request whose values could not make the hands' pod, or
// would make it other than the grant says, naming the first wrong value.
func (r Request) Check() error {
	if _, _, err := ParseTarget(r.Target); err != nil {
		return err
	}
	if len(r.Mounts) == 0 {
		return errors.New("the hands request names no path to mount")
	}
	seen := map[string]bool{}
	for _, m := range r.Mounts {
		if err := checkMountPath(m.Path); err != nil {
			return fmt.Errorf("the hands request's path %q: %w", m.Path, err)
		}
		if seen[m.Path] {
			return fmt.Errorf("the hands request names path %q twice", m.Path)
		}
		seen[m.Path] = true
	}
	for _, h := range r.Hosts {
		if _, err := hostrule.Parse(h); err != nil {
			return fmt.Errorf("the hands request's network.hosts %q: %w", h, err)
		}
	}
	for _, v := range []struct {
		name string
		n    int64
	}{{"memory", r.Memory}, {"tmp", r.Tmp}, {"file_size", r.FileSize}} {
		if v.n < 0 {
			return fmt.Errorf("the hands request's %s %d is negative", v.name, v.n)
		}
	}
	if r.RuntimeClass != "" && (len(r.RuntimeClass) > 253 || !dnsSubdomain().MatchString(r.RuntimeClass)) {
		return fmt.Errorf("the hands request's runtime_class %q is not a RuntimeClass name (a DNS subdomain)", r.RuntimeClass)
	}
	if r.WorkspaceSize != "" && (len(r.WorkspaceSize) > 32 || !quantity().MatchString(r.WorkspaceSize) || strings.Trim(r.WorkspaceSize, "0.KMGTPEik") == "") {
		return fmt.Errorf("the hands request's workspace_size %q is not a positive quantity (10Gi)", r.WorkspaceSize)
	}
	if r.WorkspaceClass != "" {
		if r.WorkspaceSize == "" {
			return fmt.Errorf("the hands request's workspace_class %q comes without a workspace_size", r.WorkspaceClass)
		}
		if len(r.WorkspaceClass) > 253 || !dnsSubdomain().MatchString(r.WorkspaceClass) {
			return fmt.Errorf("the hands request's workspace_class %q is not a StorageClass name (a DNS subdomain)", r.WorkspaceClass)
		}
	}
	if r.Session != "" && !sessionID().MatchString(r.Session) {
		return fmt.Errorf("the hands request's session %q is not %d lower-case hex digits", r.Session, sessionLen)
	}
	if err := CheckPrivate(r.Private); err != nil {
		return err
	}
	switch r.PodSecurity {
	case "", grant.PodSecurityRestricted, grant.PodSecurityUserns:
	default:
		return fmt.Errorf("the hands request's pod_security %q is not %q or %q", r.PodSecurity, grant.PodSecurityRestricted, grant.PodSecurityUserns)
	}
	return nil
}

// Command is the hands' program in the pod's image: the tool-server, which
// runs outside the native sandbox with the session's Secret and the pod's
// network. No granted path may be its directory, under it or above it.
const Command = "/usr/local/bin/airlock"

// ownTrees are the pod's own directories a granted path may be neither
// of, nor under, nor above: the Secret's, the directory of the command (a
// writable volume there, the session's claim above all, which outlives
// the pod, would let a call put its own program in the tool-server's
// place for the session's next pod), and the kernel's trees, which the
// runtime makes.
var ownTrees = []string{SecretDir, path.Dir(Command), "/proc", "/sys", "/dev"}

// CheckMountPath refuses a path the hands' pod cannot mount a granted
// volume at: not absolute and clean, with a control character, or one of
// the pod's own (the root, /tmp, and ownTrees: the Secret's directory, the
// command's, /proc, /sys and /dev, what is under them and above them).
func CheckMountPath(p string) error { return checkMountPath(p) }

func checkMountPath(p string) error {
	switch {
	case len(p) > 4096:
		return errors.New("longer than 4096 bytes")
	case strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return errors.New("holds a control character")
	case !path.IsAbs(p):
		return errors.New("not absolute")
	case path.Clean(p) != p:
		return fmt.Errorf("not clean (it would be %q)", path.Clean(p))
	case p == "/" || p == "/tmp":
		return fmt.Errorf("the pod's own mounts are there (/, /tmp, %s): grant a directory beside them", strings.Join(ownTrees, ", "))
	}
	for _, own := range ownTrees {
		if p == own || strings.HasPrefix(own, p+"/") || strings.HasPrefix(p, own+"/") {
			return fmt.Errorf("the pod's own %s is there (a granted path may be none of /, /tmp, %s, nor under or above them): grant a directory beside them", own, strings.Join(ownTrees, ", "))
		}
	}
	return nil
}

// sessionLen is the length of a session id: 48 random bits in hex.
const sessionLen = 12

var sessionID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-f]{12}$`) })

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
