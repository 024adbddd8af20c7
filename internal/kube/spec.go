package kube

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/hostrule"
	"github.com/airlockhq/airlock/internal/kube/kubereq"
)

// Labels and annotations on every object this package creates.
const (
	LabelManagedBy   = "app.kubernetes.io/managed-by"
	ManagedBy        = "airlock"
	LabelSession     = "airlock.dev/session"
	LabelBroker      = "airlock.dev/broker"
	LabelTemplate    = "airlock.dev/template"
	LabelRole        = "airlock.dev/role"
	AnnotationExpiry = "airlock.dev/expires"
)

// DefaultPort is the tool-server's port in the pod.
const DefaultPort = 7443

// UID is the non-root user the hands run as.
const UID = 65532

// Where the session's Secret is mounted in the pod, and its keys.
const (
	secretDir = kubereq.SecretDir
	keyToken  = "token"
	keyCert   = "tls.crt"
	keyKey    = "tls.key"
	// ServerName is the name in the hands' certificate: the broker dials
	// a pod IP and verifies the certificate against this name.
	ServerName = "hands.airlock.invalid"
)

// Mount is a granted path of the hands: the pod mounts a volume there, at
// the same absolute path as on the broker's side.
type Mount struct {
	Path     string
	Writable bool
}

// Hands is everything the hands' pod depends on. PodSpec and NetworkPolicy
// turn it into manifests; nothing else decides their security settings.
type Hands struct {
	Name      string // the pod's name
	Namespace string
	Session   string // session id (label value)
	Broker    string // broker id (label value)
	Template  string
	// Image is the hands' image, pinned by digest (NAME@sha256:HEX,
	// grant.CheckImage): validateHands refuses a tag.
	Image string
	Port  int // the tool-server's port; 0 means DefaultPort
	// Secret is the Secret holding the tool-server's token and TLS key.
	Secret  string
	Expires time.Time
	// Mounts are the granted paths; each gets an emptyDir, the first a
	// PersistentVolumeClaim when Workspace names one.
	Mounts    []Mount
	Workspace string
	// WorkspaceSize, when set, has the session make its own claim for
	// the first path (PersistentVolumeClaim), of this size (a Kubernetes
	// quantity), in the StorageClass WorkspaceClass (empty: the cluster's
	// default). Plain Pods only.
	WorkspaceSize  string
	WorkspaceClass string
	// Hosts are the grant's network.hosts: the egress the pod may have
	// to public addresses.
	Hosts []string
	// Private are the grant's network.private entries: each IP and CIDR
	// is let out on its ports (kubereq.CheckPrivate).
	Private []string
	Limits  grant.Limits
	// RuntimeClass is the pod's runtimeClassName (gVisor, Kata); empty for
	// the cluster's default runtime.
	RuntimeClass string
	// AllowUnenforced gives the tool-server --allow-unenforced-limits: the
	// grant accepts memory and process limits that the pod, which has no
	// cgroup of its own to delegate, cannot enforce per call. A call runs
	// so only when the broker's grant says so too.
	AllowUnenforced bool
	// PodSecurity is the grant's remote.pod_security: empty or
	// grant.PodSecurityRestricted for a pod of the restricted standard,
	// grant.PodSecurityUserns for a user-namespaced pod in which the
	// native sandbox starts (PodSpec).
	PodSecurity string
	// From the template: scheduling only, never security settings.
	NodeSelector     map[string]string
	Tolerations      []corev1.Toleration
	ImagePullSecrets []corev1.LocalObjectReference
	// BrokerCIDRs are the addresses the broker connects from when it runs
	// outside the cluster; in the cluster it is a pod labelled
	// airlock.dev/role=broker.
	BrokerCIDRs []string
}

func (h *Hands) port() int32 {
	if h.Port == 0 {
		return DefaultPort
	}
	return int32(h.Port)
}

// HandsFor fills the request's part of Hands: paths, hosts, limits and
// the runtime class.
func HandsFor(r kubereq.Request) Hands {
	h := Hands{Hosts: r.Hosts, Private: r.Private, RuntimeClass: r.RuntimeClass, WorkspaceSize: r.WorkspaceSize, WorkspaceClass: r.WorkspaceClass,
		AllowUnenforced: r.AllowUnenforced, PodSecurity: r.PodSecurity}
	for _, m := range r.Mounts {
		h.Mounts = append(h.Mounts, Mount{Path: m.Path, Writable: m.Writable})
	}
	h.Limits = grant.DefaultLimits
	if r.Memory > 0 {
		h.Limits.Memory = r.Memory
	}
	if r.Tmp > 0 {
		h.Limits.Tmp = r.Tmp
	}
	if r.FileSize > 0 {
		h.Limits.FileSize = r.FileSize
	}
	return h
}

// Labels are the labels of every object of the session.
func (h *Hands) Labels() map[string]string {
	return map[string]string{
		LabelManagedBy: ManagedBy,
		LabelSession:   h.Session,
		LabelBroker:    h.Broker,
		LabelTemplate:  h.Template,
	}
}

func (h *Hands) meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: name, Namespace: h.Namespace, Labels: h.Labels(),
		Annotations: map[string]string{AnnotationExpiry: h.Expires.UTC().Format(time.RFC3339)},
	}
}

// Args are the tool-server's arguments in the pod.
func (h *Hands) Args() []string {
	a := []string{"tool-server",
		"--listen", "0.0.0.0:" + strconv.Itoa(int(h.port())),
		"--token-file", secretDir + "/" + keyToken,
		"--tls-cert", secretDir + "/" + keyCert,
		"--tls-key", secretDir + "/" + keyKey,
		"--records", "/tmp/airlock-records",
	}
	for _, m := range h.Mounts {
		if m.Writable {
			a = append(a, "--rw", m.Path)
		} else {
			a = append(a, "--ro", m.Path)
		}
	}
	for _, host := range h.Hosts {
		a = append(a, "--allow-host", host)
	}
	for _, p := range h.Private {
		a = append(a, "--allow-private", p)
	}
	if h.AllowUnenforced {
		a = append(a, "--allow-unenforced-limits")
	}
	return a
}

// SeccompProfile is the seccomp profile of the userns pods, as the pod
// names it: a path under the kubelet's seccomp directory
// (/var/lib/kubelet/seccomp), where deploy/seccomp/installer.yaml puts
// deploy/seccomp/hands.json.
const SeccompProfile = "airlock/hands.json"

// userns reports whether h asks for the user-namespaced pod.
func (h *Hands) userns() bool { return h.PodSecurity == grant.PodSecurityUserns }

// headroom is the memory the tool-server itself needs beside the calls.
const headroom = 256 << 20

// PodSpec is the hands' pod spec: the one function that decides it.
// Non-root, read-only root filesystem, every capability dropped, no
// privilege escalation, seccomp RuntimeDefault, no service-account token,
// resources from the grant's limits, the optional RuntimeClass: a pod of
// the "restricted" Pod Security Standard.
//
// With h.PodSecurity grant.PodSecurityUserns, the pod is the same but for
// three settings, which let the native sandbox start in it under a runtime
// that shares the node's kernel: hostUsers false (the pod's own user
// namespace: its uids are unprivileged ones of the node), procMount
// Unmasked (Linux lets the sandbox mount a fresh /proc only where no part
// of the container's is hidden) and the Localhost seccomp profile
// SeccompProfile (the runtime's default refuses sethostname). It passes
// the "baseline" standard, and of "restricted" fails procMount only.
func PodSpec(h *Hands) corev1.PodSpec {
	no, yes := false, true
	uid := int64(UID)
	grace := int64(5)
	mode := int32(0o440)
	mem := h.Limits.Memory + headroom
	tmp := h.Limits.Tmp + h.Limits.FileSize
	spec := corev1.PodSpec{
		AutomountServiceAccountToken:  &no,
		EnableServiceLinks:            &no,
		RestartPolicy:                 corev1.RestartPolicyNever,
		TerminationGracePeriodSeconds: &grace,
		SecurityContext: &corev1.PodSecurityContext{
			RunAsNonRoot:   &yes,
			RunAsUser:      &uid,
			RunAsGroup:     &uid,
			FSGroup:        &uid,
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		},
		NodeSelector:     h.NodeSelector,
		Tolerations:      h.Tolerations,
		ImagePullSecrets: h.ImagePullSecrets,
		Containers: []corev1.Container{{
			Name:            "hands",
			Image:           h.Image,
			ImagePullPolicy: corev1.PullIfNotPresent,
			Command:         []string{kubereq.Command},
			Args:            h.Args(),
			Ports:           []corev1.ContainerPort{{Name: "tool-server", ContainerPort: h.port(), Protocol: corev1.ProtocolTCP}},
			ReadinessProbe: &corev1.Probe{
				ProbeHandler:  corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(h.port())}},
				PeriodSeconds: 1,
			},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{
					corev1.ResourceCPU:    resource.MustParse("100m"),
					corev1.ResourceMemory: *resource.NewQuantity(headroom, resource.BinarySI),
				},
				Limits: corev1.ResourceList{
					corev1.ResourceMemory:           *resource.NewQuantity(mem, resource.BinarySI),
					corev1.ResourceEphemeralStorage: *resource.NewQuantity(tmp, resource.BinarySI),
				},
			},
			SecurityContext: &corev1.SecurityContext{
				AllowPrivilegeEscalation: &no,
				ReadOnlyRootFilesystem:   &yes,
				RunAsNonRoot:             &yes,
				Privileged:               &no,
				Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			VolumeMounts: []corev1.VolumeMount{
				{Name: "airlock-secret", MountPath: secretDir, ReadOnly: true},
				{Name: "tmp", MountPath: "/tmp"},
			},
		}},
		Volumes: []corev1.Volume{
			{Name: "airlock-secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: h.Secret, DefaultMode: &mode}}},
			{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: resource.NewQuantity(tmp, resource.BinarySI)}}},
		},
	}
	if h.RuntimeClass != "" {
		rc := h.RuntimeClass
		spec.RuntimeClassName = &rc
	}
	if h.userns() {
		spec.HostUsers = &no
		pm := corev1.UnmaskedProcMount
		spec.Containers[0].SecurityContext.ProcMount = &pm
		profile := SeccompProfile
		sp := corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: &profile}
		spec.SecurityContext.SeccompProfile = &sp
		csp := sp
		spec.Containers[0].SecurityContext.SeccompProfile = &csp
	}
	for i, m := range h.Mounts {
		name := "workspace-" + strconv.Itoa(i)
		src := corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
		if i == 0 && h.Workspace != "" {
			src = corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: h.Workspace}}
		}
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: name, VolumeSource: src})
		spec.Containers[0].VolumeMounts = append(spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: name, MountPath: m.Path, ReadOnly: !m.Writable})
	}
	return spec
}

// Pod is the hands' pod: PodSpec with the session's labels, its expiry as
// an annotation and as activeDeadlineSeconds (the kubelet ends a pod its
// broker forgot), owned by the session's Secret.
func Pod(h *Hands, now time.Time, owner *metav1.OwnerReference) *corev1.Pod {
	p := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: h.meta(h.Name),
		Spec:       PodSpec(h),
	}
	if owner != nil {
		p.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	// Never without a deadline: a pod whose expiry has passed ends at once.
	d := max(int64(h.Expires.Sub(now).Seconds()), 1)
	p.Spec.ActiveDeadlineSeconds = &d
	return p
}

// PersistentVolumeClaim is the session's workspace claim, named
// h.Workspace: ReadWriteOnce, h.WorkspaceSize, in h.WorkspaceClass (else
// the cluster's default StorageClass), with the session's labels and
// expiry, owned by the session's Secret like its pods.
func PersistentVolumeClaim(h *Hands, owner *metav1.OwnerReference) (*corev1.PersistentVolumeClaim, error) {
	size, err := workspaceSize(h.WorkspaceSize)
	if err != nil {
		return nil, err
	}
	c := &corev1.PersistentVolumeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: h.meta(h.Workspace),
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
		},
	}
	if h.WorkspaceClass != "" {
		sc := h.WorkspaceClass
		c.Spec.StorageClassName = &sc
	}
	if owner != nil {
		c.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	return c, nil
}

// workspaceSize parses the workspace's size, a positive quantity.
func workspaceSize(s string) (resource.Quantity, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil || q.Sign() <= 0 {
		return resource.Quantity{}, fmt.Errorf("workspace size %q is not a positive Kubernetes quantity (10Gi)", s)
	}
	return q, nil
}

// NetworkPolicy lets into the session's pods only the broker, on the
// tool-server's port, and out of them only DNS, the ports of the grant's
// hosts on public addresses (the hands' egress proxy then allows only the
// granted names), and each IP and CIDR of network.private on its ports; a
// grant without hosts or private entries gets no egress at all. A name in
// network.private gets no peer of its own (kubereq.CheckPrivate): only DNS
// to resolve it.
func NetworkPolicy(h *Hands, name string) *networkingv1.NetworkPolicy {
	tcp, udp := corev1.ProtocolTCP, corev1.ProtocolUDP
	port := intstr.FromInt32(h.port())
	from := []networkingv1.NetworkPolicyPeer{{
		NamespaceSelector: &metav1.LabelSelector{},
		PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{LabelRole: "broker"}},
	}}
	for _, c := range h.BrokerCIDRs {
		from = append(from, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: c}})
	}
	np := &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: h.meta(name),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{LabelSession: h.Session, LabelManagedBy: ManagedBy}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
			Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From:  from,
				Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &port}},
			}},
			Egress: []networkingv1.NetworkPolicyEgressRule{},
		},
	}
	blocks, names := privateBlocks(h.Private)
	if len(h.Hosts) == 0 && len(blocks) == 0 && !names {
		return np
	}
	tcpPorts := func(ps []int32) []networkingv1.NetworkPolicyPort {
		var out []networkingv1.NetworkPolicyPort
		for _, p := range ps {
			ip := intstr.FromInt32(p)
			out = append(out, networkingv1.NetworkPolicyPort{Protocol: &tcp, Port: &ip})
		}
		return out
	}
	if len(h.Hosts) > 0 || names {
		dns := intstr.FromInt32(53)
		np.Spec.Egress = append(np.Spec.Egress, networkingv1.NetworkPolicyEgressRule{
			To: []networkingv1.NetworkPolicyPeer{{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "kube-system"}},
				PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"k8s-app": "kube-dns"}},
			}},
			Ports: []networkingv1.NetworkPolicyPort{{Protocol: &udp, Port: &dns}, {Protocol: &tcp, Port: &dns}},
		})
	}
	if len(h.Hosts) > 0 {
		np.Spec.Egress = append(np.Spec.Egress, networkingv1.NetworkPolicyEgressRule{
			To:    publicPeers(),
			Ports: tcpPorts(hostPorts(h.Hosts)),
		})
	}
	for _, b := range blocks {
		np.Spec.Egress = append(np.Spec.Egress, networkingv1.NetworkPolicyEgressRule{
			To:    []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: b.cidr}}},
			Ports: tcpPorts(b.ports),
		})
	}
	return np
}

// publicPeers are the public addresses (hostrule.PublicBlocks: those the
// hands' egress proxy would dial) as ipBlock peers.
func publicPeers() []networkingv1.NetworkPolicyPeer {
	var out []networkingv1.NetworkPolicyPeer
	for _, b := range hostrule.PublicBlocks() {
		ib := &networkingv1.IPBlock{CIDR: b.CIDR.String()}
		for _, e := range b.Except {
			ib.Except = append(ib.Except, e.String())
		}
		out = append(out, networkingv1.NetworkPolicyPeer{IPBlock: ib})
	}
	return out
}

// privateBlock is a network.private IP or CIDR as a NetworkPolicy peer:
// the CIDR (an IP as /32 or /128) and the ports the grant allows it.
type privateBlock struct {
	cidr  string
	ports []int32
}

// privateBlocks are the IPs and CIDRs of network.private, in the grant's
// order, and whether it lists any name. Entries that do not parse are
// left out (kubereq.Decode refused them).
func privateBlocks(private []string) (blocks []privateBlock, names bool) {
	for _, e := range private {
		p, err := hostrule.ParsePrivate(e)
		if err != nil {
			continue
		}
		var pfx netip.Prefix
		switch {
		case p.Prefix().IsValid():
			pfx = p.Prefix()
		case p.Addr().IsValid():
			pfx = netip.PrefixFrom(p.Addr(), p.Addr().BitLen())
		default:
			names = true
			continue
		}
		var ports []int32
		for _, n := range kubereq.Ports(p) {
			ports = append(ports, int32(n))
		}
		blocks = append(blocks, privateBlock{cidr: pfx.String(), ports: ports})
	}
	return blocks, names
}

// hostPorts are the ports the grant's host entries name (HOST:PORT), 443
// and 80 for entries without one, sorted.
func hostPorts(hosts []string) []int32 {
	var out []int32
	add := func(p int32) {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	for _, h := range hosts {
		if _, p, err := net.SplitHostPort(h); err == nil {
			if n, err := strconv.Atoi(p); err == nil && n > 0 && n < 65536 {
				add(int32(n))
				continue
			}
		}
		add(443)
		add(80)
	}
	slices.Sort(out)
	return out
}

// validateHands refuses Hands that cannot make a pod.
func validateHands(h *Hands) error {
	var bad []string
	if h.Image == "" {
		bad = append(bad, "no image (the template's first container names none)")
	} else if err := grant.CheckImage(h.Image); err != nil {
		// The pod gets the calls' secrets and the workspace: what runs
		// there must not change with a registry's tag.
		bad = append(bad, err.Error()+" (the PodTemplate's first container: a tag lets the registry change what runs with the calls' secrets)")
	}
	if len(h.Mounts) == 0 {
		bad = append(bad, "no granted path to mount")
	}
	for _, m := range h.Mounts {
		if err := kubereq.CheckMountPath(m.Path); err != nil {
			bad = append(bad, fmt.Sprintf("granted path %q: %v", m.Path, err))
		}
	}
	if h.WorkspaceSize != "" {
		if _, err := workspaceSize(h.WorkspaceSize); err != nil {
			bad = append(bad, err.Error())
		}
	}
	if h.WorkspaceClass != "" && h.WorkspaceSize == "" {
		bad = append(bad, fmt.Sprintf("workspace class %q without a workspace size", h.WorkspaceClass))
	}
	for _, c := range h.BrokerCIDRs {
		if _, _, err := net.ParseCIDR(c); err != nil {
			bad = append(bad, fmt.Sprintf("broker address %q is not a CIDR", c))
		}
	}
	if err := kubereq.CheckPrivate(h.Private); err != nil {
		bad = append(bad, err.Error())
	}
	switch h.PodSecurity {
	case "", grant.PodSecurityRestricted, grant.PodSecurityUserns:
	default:
		bad = append(bad, fmt.Sprintf("pod security %q is not %q or %q", h.PodSecurity, grant.PodSecurityRestricted, grant.PodSecurityUserns))
	}
	if len(bad) > 0 {
		return fmt.Errorf("the hands' pod: %s", strings.Join(bad, "; "))
	}
	return nil
}
