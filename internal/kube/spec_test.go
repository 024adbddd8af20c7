package kube

import (
	"bytes"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	psapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"sigs.k8s.io/yaml"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/hostrule"
	"github.com/airlockhq/airlock/internal/kube/kubereq"
)

var update = flag.Bool("update", false, "rewrite the golden manifests in testdata and deploy/")

// goldenHands are fixed Hands: the same manifests on every run.
func goldenHands(hosts ...string) *Hands {
	l := grant.DefaultLimits
	return &Hands{
		Name: "airlock-0123456789ab-1", Namespace: "agents", Session: "0123456789ab",
		Broker: "broker-host_4242-98765", Template: "hands",
		Image: "registry.example/airlock-hands@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", Secret: "airlock-0123456789ab",
		Expires: time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC),
		Mounts:  []Mount{{Path: "/work/project", Writable: true}, {Path: "/opt/reference"}},
		Hosts:   hosts, Limits: l, RuntimeClass: "gvisor",
	}
}

var goldenNow = time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)

// golden compares v's YAML with testdata/name (or path), rewriting it with -update.
func golden(t *testing.T, path string, v any) {
	t.Helper()
	got, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./internal/kube -run %s -update writes it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the generated manifest (review, then go test ./internal/kube -run %s -update):\n%s", path, t.Name(), got)
	}
}

// TestGoldenManifests pins the generated pod, policies and claim.
func TestGoldenManifests(t *testing.T) {
	h := goldenHands()
	golden(t, "testdata/pod.yaml", Pod(h, goldenNow, nil))
	golden(t, "testdata/networkpolicy-no-egress.yaml", NetworkPolicy(h, h.Secret))
	hn := goldenHands("api.github.com", "*.pypi.org", "registry.example:5000")
	hn.BrokerCIDRs = []string{"203.0.113.7/32"}
	golden(t, "testdata/networkpolicy-hosts.yaml", NetworkPolicy(hn, hn.Secret))
	hp := goldenHands("api.github.com")
	hp.Private = privateEntries
	golden(t, "testdata/networkpolicy-private.yaml", NetworkPolicy(hp, hp.Secret))
	golden(t, "testdata/pod-private.yaml", Pod(hp, goldenNow, nil))
	golden(t, "testdata/sandboxclaim.yaml", Claim(h, "airlock-0123456789ab-1"))
	hw := goldenHands()
	hw.Workspace, hw.WorkspaceSize, hw.WorkspaceClass = hw.Secret, "10Gi", "fast-ssd"
	pvc, err := PersistentVolumeClaim(hw, &metav1.OwnerReference{APIVersion: "v1", Kind: "Secret", Name: hw.Secret, UID: "0123-secret-uid"})
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "testdata/persistentvolumeclaim.yaml", pvc)
	golden(t, "testdata/pod-workspace.yaml", Pod(hw, goldenNow, nil))
	hu := goldenHands()
	hu.RuntimeClass, hu.PodSecurity, hu.AllowUnenforced = "", grant.PodSecurityUserns, true
	golden(t, "testdata/pod-userns.yaml", Pod(hu, goldenNow, nil))
}

// privateEntries are a grant's network.private: a CIDR, IPs with and
// without a port, IPv6, and a name on a port an IP entry opens.
var privateEntries = []string{"10.20.0.0/16", "192.168.1.5:5432", "172.16.0.9", "[fd00::7]:8443", "db.corp.example:5432"}

// TestNetworkPolicyPrivate: each IP and CIDR of network.private is an
// ipBlock peer on exactly the ports the grant allows it, a name gets DNS
// and no peer, and nothing else is opened: no public rule without
// network.hosts, no private port added to the public rule with them.
func TestNetworkPolicyPrivate(t *testing.T) {
	type rule struct {
		To    []string
		Ports []string
	}
	rules := func(h *Hands) []rule {
		var out []rule
		for _, r := range NetworkPolicy(h, h.Secret).Spec.Egress {
			var x rule
			for _, p := range r.To {
				switch {
				case p.IPBlock != nil:
					x.To = append(x.To, p.IPBlock.CIDR+" except "+strings.Join(p.IPBlock.Except, ","))
				case p.PodSelector != nil && p.PodSelector.MatchLabels["k8s-app"] == "kube-dns":
					x.To = append(x.To, "kube-dns")
				default:
					x.To = append(x.To, "other")
				}
			}
			for _, p := range r.Ports {
				x.Ports = append(x.Ports, string(*p.Protocol)+"/"+p.Port.String())
			}
			out = append(out, x)
		}
		return out
	}
	dns := rule{To: []string{"kube-dns"}, Ports: []string{"UDP/53", "TCP/53"}}
	web := []string{"TCP/80", "TCP/443"}
	blocks := []rule{
		{To: []string{"10.20.0.0/16 except "}, Ports: web},
		{To: []string{"192.168.1.5/32 except "}, Ports: []string{"TCP/5432"}},
		{To: []string{"172.16.0.9/32 except "}, Ports: web},
		{To: []string{"fd00::7/128 except "}, Ports: []string{"TCP/8443"}},
	}

	h := goldenHands()
	h.Private = privateEntries[:4] // addresses only: no DNS, no public rule
	if d := cmp.Diff(blocks, rules(h)); d != "" {
		t.Errorf("private addresses only (-want +got):\n%s", d)
	}
	h.Private = privateEntries // a name: DNS to resolve it, no peer of its own
	if d := cmp.Diff(append([]rule{dns}, blocks...), rules(h)); d != "" {
		t.Errorf("private addresses and a name (-want +got):\n%s", d)
	}
	h = goldenHands("api.github.com")
	h.Private = privateEntries
	public := rule{Ports: web} // the public blocks: TestNetworkPolicyPublicEgressIsPublic
	for _, b := range hostrule.PublicBlocks() {
		var ex []string
		for _, e := range b.Except {
			ex = append(ex, e.String())
		}
		public.To = append(public.To, b.CIDR.String()+" except "+strings.Join(ex, ","))
	}
	if d := cmp.Diff(append([]rule{dns, public}, blocks...), rules(h)); d != "" {
		t.Errorf("hosts and private entries: the public rule keeps only the hosts' ports (-want +got):\n%s", d)
	}
	args := strings.Join(h.Args(), " ")
	for _, e := range privateEntries {
		if !strings.Contains(args, "--allow-private "+e) {
			t.Errorf("the hands' arguments lack --allow-private %s: %s", e, args)
		}
	}
	if strings.Contains(args, "--allow-host 10.") || strings.Contains(args, "--allow-host db.") {
		t.Errorf("a private entry is passed as a host: %s", args)
	}
}

// TestPrivateNamesNeedAnAddress: a name in network.private whose port no
// IP or CIDR entry opens could never be reached from the pod; the
// broker's request refuses it, naming the entry and the fix, and so do
// the hands (a request made elsewhere).
func TestPrivateNamesNeedAnAddress(t *testing.T) {
	dir := t.TempDir()
	g, err := grant.Parse([]byte(`[paths]
read_write = ["."]

[network]
private = ["10.0.0.0/8", "db.corp.example:5432"]
`), "g.toml", dir)
	if err != nil {
		t.Fatal(err)
	}
	_, err = kubereq.FromGrant("kube://agents/hands", g)
	if err == nil || !strings.Contains(err.Error(), `network.private "db.corp.example:5432" is a name`) || !strings.Contains(err.Error(), `"10.1.2.3:5432"`) {
		t.Fatalf("a private name no address entry opens: %v, want it refused naming the entry and the fix", err)
	}
	h := goldenHands()
	h.Private = []string{"*.corp.example"}
	if err := validateHands(h); err == nil || !strings.Contains(err.Error(), `"*.corp.example" is a name`) {
		t.Fatalf("the hands took a private name without an address: %v", err)
	}
	h.Private = []string{"*.corp.example", "10.0.0.0/8"} // 80 and 443 both ways
	if err := validateHands(h); err != nil {
		t.Fatal(err)
	}
	g, err = grant.Parse([]byte(`[paths]
read_write = ["."]

[network]
hosts = ["api.github.com"]
private = ["10.9.8.7:5432", "db.corp.example:5432"]
`), "g.toml", dir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := kubereq.FromGrant("kube://agents/hands", g)
	if err != nil {
		t.Fatal(err)
	}
	if r, err = kubereq.Decode(r.Encode()); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"api.github.com"}, r.Hosts); d != "" {
		t.Errorf("request hosts (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"10.9.8.7:5432", "db.corp.example:5432"}, r.Private); d != "" {
		t.Errorf("request private entries (-want +got):\n%s", d)
	}
}

// deployHands are the hands of the manifests in deploy/.
func deployHands() *Hands {
	return &Hands{
		Namespace: "airlock-hands", Template: "hands",
		Image:  "ghcr.io/airlockhq/airlock-hands:latest",
		Mounts: []Mount{{Path: "/workspace", Writable: true}},
		Limits: grant.DefaultLimits,
	}
}

// TestDeployManifests keeps deploy/'s template and warm pool the output
// of PodSpec and NetworkPolicy.
func TestDeployManifests(t *testing.T) {
	h := deployHands()
	st, err := SandboxTemplate(h)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "../../deploy/sandbox/sandboxtemplate.yaml", st.Object)
	golden(t, "../../deploy/sandbox/warmpool.yaml", WarmPool(h.Namespace, h.Template, 3).Object)
	pt := &corev1.PodTemplate{}
	pt.APIVersion, pt.Kind = "v1", "PodTemplate"
	pt.Name, pt.Namespace = h.Template, h.Namespace
	pt.Labels = map[string]string{LabelManagedBy: ManagedBy}
	// The broker takes only the image and scheduling from it; the rest
	// is PodSpec's, shown here for review.
	hh := *h
	hh.Secret = "airlock-SESSION"
	pt.Template.Spec = PodSpec(&hh)
	golden(t, "../../deploy/pods/podtemplate.yaml", pt)
}

// TestRestrictedPodSecurity runs the Kubernetes "restricted" Pod Security
// Standard (k8s.io/pod-security-admission's own checks, latest version)
// on the generated pod specs, and checks that the check catches a
// weakened spec.
func TestRestrictedPodSecurity(t *testing.T) {
	ev, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	restricted := psapi.LevelVersion{Level: psapi.LevelRestricted, Version: psapi.LatestVersion()}
	check := func(p *corev1.Pod) []string {
		var bad []string
		for _, r := range ev.EvaluatePod(restricted, &p.ObjectMeta, &p.Spec) {
			if !r.Allowed {
				bad = append(bad, r.ForbiddenReason+": "+r.ForbiddenDetail)
			}
		}
		return bad
	}
	h := goldenHands("api.github.com")
	hw := goldenHands()
	hw.Workspace = hw.Secret
	for name, h := range map[string]*Hands{"session": h, "workspace claim": hw, "no runtime class": {Image: "x", Mounts: h.Mounts, Limits: h.Limits}, "deploy": deployHands()} {
		if bad := check(Pod(h, goldenNow, nil)); len(bad) > 0 {
			t.Errorf("%s: the pod spec fails the restricted standard:\n%s", name, strings.Join(bad, "\n"))
		}
	}
	for name, weaken := range map[string]func(*corev1.PodSpec){
		"capability kept":      func(s *corev1.PodSpec) { s.Containers[0].SecurityContext.Capabilities.Drop = nil },
		"privilege escalation": func(s *corev1.PodSpec) { s.Containers[0].SecurityContext.AllowPrivilegeEscalation = nil },
		"root": func(s *corev1.PodSpec) {
			s.SecurityContext.RunAsNonRoot = nil
			s.Containers[0].SecurityContext.RunAsNonRoot = nil
		},
		"no seccomp": func(s *corev1.PodSpec) {
			s.SecurityContext.SeccompProfile = nil
			s.Containers[0].SecurityContext.SeccompProfile = nil
		},
	} {
		p := Pod(h, goldenNow, nil)
		weaken(&p.Spec)
		if len(check(p)) == 0 {
			t.Errorf("%s: the restricted check let a weakened spec through", name)
		}
	}
}

// TestUsernsPodSecurity runs the Pod Security Standards (latest version)
// on the userns pod: it passes "baseline", which since Kubernetes 1.35
// allows procMount Unmasked in a user-namespaced pod, and of "restricted"
// it fails the procMount check alone; every other setting stays as locked
// down as the restricted pod's.
func TestUsernsPodSecurity(t *testing.T) {
	ev, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	failed := func(level psapi.Level, p *corev1.Pod) []string {
		var bad []string
		for _, r := range ev.EvaluatePod(psapi.LevelVersion{Level: level, Version: psapi.LatestVersion()}, &p.ObjectMeta, &p.Spec) {
			if !r.Allowed {
				bad = append(bad, r.ForbiddenReason)
			}
		}
		return bad
	}
	h := goldenHands("api.github.com")
	h.PodSecurity = grant.PodSecurityUserns
	hw := goldenHands()
	hw.Workspace, hw.PodSecurity = hw.Secret, grant.PodSecurityUserns
	for name, h := range map[string]*Hands{"session": h, "workspace claim": hw, "no runtime class": {Image: "x", Mounts: h.Mounts, Limits: h.Limits, PodSecurity: grant.PodSecurityUserns}} {
		p := Pod(h, goldenNow, nil)
		if bad := failed(psapi.LevelBaseline, p); len(bad) > 0 {
			t.Errorf("%s: the userns pod fails the baseline standard: %v", name, bad)
		}
		if d := cmp.Diff([]string{"procMount"}, failed(psapi.LevelRestricted, p)); d != "" {
			t.Errorf("%s: the restricted checks the userns pod fails (-want +got):\n%s", name, d)
		}
	}
	// Without hostUsers: false, baseline forbids the unmasked /proc.
	p := Pod(h, goldenNow, nil)
	p.Spec.HostUsers = nil
	if d := cmp.Diff([]string{"procMount"}, failed(psapi.LevelBaseline, p)); d != "" {
		t.Errorf("an unmasked /proc in a pod of the node's users: baseline's failures (-want +got):\n%s", d)
	}

	// The userns pod differs from the restricted one in exactly three
	// settings.
	r := PodSpec(goldenHands())
	u := PodSpec(&Hands{Name: r.Hostname, Image: goldenHands().Image, Mounts: goldenHands().Mounts, Limits: grant.DefaultLimits, RuntimeClass: "gvisor", PodSecurity: grant.PodSecurityUserns})
	no := false
	pm := corev1.UnmaskedProcMount
	profile := SeccompProfile
	local := &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost, LocalhostProfile: &profile}
	r.HostUsers = &no
	r.Containers[0].SecurityContext.ProcMount = &pm
	r.SecurityContext.SeccompProfile, r.Containers[0].SecurityContext.SeccompProfile = local, local
	r.Volumes[0].Secret.SecretName = u.Volumes[0].Secret.SecretName
	if d := cmp.Diff(r, u); d != "" {
		t.Errorf("the userns pod differs from the restricted one beyond hostUsers, procMount and seccomp (-want +got):\n%s", d)
	}
}

// TestNamespaceManifests: each namespace manifest in deploy/ admits its
// pods at the level and version its enforce labels name, and the
// restricted namespace refuses the userns pod.
func TestNamespaceManifests(t *testing.T) {
	ev, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	admits := func(file string, p *corev1.Pod) bool {
		t.Helper()
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var ns corev1.Namespace
		if err := yaml.UnmarshalStrict(b, &ns); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		lv, err := psapi.ParseLevel(ns.Labels[psapi.EnforceLevelLabel])
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		v, err := psapi.ParseVersion(ns.Labels[psapi.EnforceVersionLabel])
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		return policy.AggregateCheckResults(ev.EvaluatePod(psapi.LevelVersion{Level: lv, Version: v}, &p.ObjectMeta, &p.Spec)).Allowed
	}
	restricted := Pod(deployHands(), goldenNow, nil)
	hu := deployHands()
	hu.PodSecurity = grant.PodSecurityUserns
	userns := Pod(hu, goldenNow, nil)
	for _, tc := range []struct {
		file string
		pod  *corev1.Pod
		want bool
	}{
		{"../../deploy/namespace.yaml", restricted, true},
		{"../../deploy/namespace.yaml", userns, false},
		{"../../deploy/namespace-userns.yaml", userns, true},
		{"../../deploy/namespace-userns.yaml", restricted, true},
	} {
		if got := admits(tc.file, tc.pod); got != tc.want {
			t.Errorf("%s admits the %s pod: %v, want %v", tc.file, map[bool]string{false: "restricted", true: "userns"}[tc.pod == userns], got, tc.want)
		}
	}
}

// TestPodSecurityFromGrant: the grant's remote.pod_security reaches the
// hands through the helper's request; a request with another value is
// refused.
func TestPodSecurityFromGrant(t *testing.T) {
	for _, ps := range []string{"", grant.PodSecurityRestricted, grant.PodSecurityUserns} {
		src := fmt.Sprintf("[paths]\nread_write = [%q]\n[remote]\nendpoint = \"kube://agents/hands\"\n", t.TempDir())
		if ps != "" {
			src += fmt.Sprintf("pod_security = %q\n", ps)
		}
		g, err := grant.Parse([]byte(src), "g.toml", "/")
		if err != nil {
			t.Fatal(err)
		}
		r, err := kubereq.FromGrant("kube://agents/hands", g)
		if err != nil {
			t.Fatal(err)
		}
		r, err = kubereq.Decode(r.Encode())
		if err != nil {
			t.Fatal(err)
		}
		h := HandsFor(r)
		h.Image = goldenHands().Image
		if err := validateHands(&h); err != nil {
			t.Fatal(err)
		}
		if got := PodSpec(&h).HostUsers != nil; got != (ps == grant.PodSecurityUserns) {
			t.Errorf("pod_security %q: hostUsers set %v", ps, got)
		}
	}
	r := kubereq.Request{Target: "kube://agents/hands", Mounts: []kubereq.Mount{{Path: "/w"}}, PodSecurity: "privileged"}
	if _, err := kubereq.Decode(r.Encode()); err == nil || !strings.Contains(err.Error(), `pod_security "privileged"`) {
		t.Errorf("a request for privileged pods: %v, want an error naming pod_security", err)
	}
}

// TestPodSpecLockedDown names each setting the issue asks of the pod,
// beside the standard's checks: read-only root, no token, limits.
func TestPodSpecLockedDown(t *testing.T) {
	h := goldenHands()
	s := PodSpec(h)
	c := s.Containers[0]
	switch {
	case s.AutomountServiceAccountToken == nil || *s.AutomountServiceAccountToken:
		t.Error("the service-account token is mounted")
	case c.SecurityContext.ReadOnlyRootFilesystem == nil || !*c.SecurityContext.ReadOnlyRootFilesystem:
		t.Error("the root filesystem is writable")
	case s.RuntimeClassName == nil || *s.RuntimeClassName != "gvisor":
		t.Error("the grant's runtime class is not set")
	case c.Resources.Limits.Memory().Value() != h.Limits.Memory+headroom:
		t.Errorf("memory limit %v, want the grant's %d plus %d", c.Resources.Limits.Memory(), h.Limits.Memory, headroom)
	}
	for _, a := range c.Args {
		if strings.Contains(a, "token") && !strings.HasPrefix(a, "--") && !strings.HasPrefix(a, secretDir) {
			t.Errorf("argument %q looks like a token", a)
		}
	}
	if len(c.Env) != 0 {
		t.Errorf("the hands get environment %v; they get none", c.Env)
	}
}

// TestRBACManifest: deploy/rbac.yaml grants every permission the broker
// needs (the list the doctor checks), and no verb on any other resource.
func TestRBACManifest(t *testing.T) {
	b, err := os.ReadFile("../../deploy/rbac.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var role rbacv1.Role
	for _, doc := range strings.Split(string(b), "\n---\n") {
		if strings.Contains(doc, "\nkind: Role\n") {
			if err := yaml.UnmarshalStrict([]byte(doc), &role); err != nil {
				t.Fatal(err)
			}
		}
	}
	granted := map[string]bool{}
	for _, r := range role.Rules {
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, v := range r.Verbs {
					granted[g+"/"+res+"/"+v] = true
				}
			}
		}
	}
	need := map[string]bool{}
	for _, p := range permissions {
		need[p.group+"/"+p.resource+"/"+p.verb] = true
	}
	if d := cmp.Diff(need, granted); d != "" {
		t.Errorf("deploy/rbac.yaml's Role and what the broker needs differ (-need +granted):\n%s", d)
	}
}

// TestArgsAllowUnenforced: a grant with limits.unenforced = "allow" gives
// the hands --allow-unenforced-limits (their pod has no cgroup to enforce
// per-call memory and process limits); without it they get no such flag.
func TestArgsAllowUnenforced(t *testing.T) {
	for _, allow := range []bool{false, true} {
		mode := map[bool]string{false: grant.UnenforcedRefuse, true: grant.UnenforcedAllow}[allow]
		g, err := grant.Parse([]byte(fmt.Sprintf("[paths]\nread_write = [%q]\n[limits]\nunenforced = %q\n", t.TempDir(), mode)), "test.toml", "/")
		if err != nil {
			t.Fatal(err)
		}
		r, err := kubereq.FromGrant("kube://agents/hands", g)
		if err != nil {
			t.Fatal(err)
		}
		r, err = kubereq.Decode(r.Encode())
		if err != nil {
			t.Fatal(err)
		}
		h := HandsFor(r)
		if got := slices.Contains(h.Args(), "--allow-unenforced-limits"); got != allow {
			t.Errorf("unenforced allowed %v: --allow-unenforced-limits in the hands' arguments is %v", allow, got)
		}
	}
}

// TestNetworkPolicyPublicEgressIsPublic: the egress rule that lets the
// grant's hosts out admits, by the NetworkPolicy's own semantics (an
// ipBlock's CIDR less its exceptions), exactly the addresses the hands'
// egress proxy takes for public (hostrule.IsPublic): the node's metadata
// service, the cluster's private ranges, CGNAT, benchmarking, multicast,
// NAT64 and 6to4 forms of private addresses are all refused at the
// policy too, not only by the proxy.
func TestNetworkPolicyPublicEgressIsPublic(t *testing.T) {
	h := goldenHands()
	h.Hosts = []string{"example.com"}
	h.Private = nil
	np := NetworkPolicy(h, "x")
	var public []networkingv1.NetworkPolicyPeer
	for _, r := range np.Spec.Egress {
		for _, p := range r.To {
			if p.IPBlock != nil {
				public = append(public, p)
			}
		}
	}
	if len(public) == 0 {
		t.Fatal("no ipBlock egress for the grant's hosts")
	}
	admits := func(a netip.Addr) bool {
		for _, p := range public {
			c := netip.MustParsePrefix(p.IPBlock.CIDR)
			if !c.Contains(a) {
				continue
			}
			out := false
			for _, e := range p.IPBlock.Except {
				if netip.MustParsePrefix(e).Contains(a) {
					out = true
				}
			}
			if !out {
				return true
			}
		}
		return false
	}
	for _, s := range []string{
		"0.0.0.1", "10.1.2.3", "100.64.0.1", "127.0.0.1", "169.254.169.254", "172.16.0.1", "192.0.0.1", "192.0.2.1",
		"192.168.1.1", "198.18.0.1", "198.51.100.1", "203.0.113.1", "224.0.0.1", "240.0.0.1", "255.255.255.255",
		"::", "::1", "fc00::1", "fd00:ec2::254", "fe80::1", "fec0::1", "ff02::1", "100::1", "2001:db8::1", "2001::1",
		"64:ff9b::a9fe:a9fe", "64:ff9b::a00:1", "64:ff9b:1::1", "2002:a00:1::1", "::ffff:10.0.0.1", "3fff::1",
		"8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "64:ff9b::808:808", "2a00:1450:4001::1",
	} {
		a := netip.MustParseAddr(s)
		if got, want := admits(a), hostrule.IsPublic(a); got != want {
			t.Errorf("%s: the policy admits it %v, the egress proxy takes it for public %v", s, got, want)
		}
	}
}

// TestDefaultDenyPolicy: deploy/networkpolicy-default-deny.yaml denies
// all traffic (both policy types, no rule) to every pod the broker makes
// (plain and userns, and the warm pool's), and to no broker pod, so that
// a hands pod whose session policy is gone fails closed.
func TestDefaultDenyPolicy(t *testing.T) {
	b, err := os.ReadFile("../../deploy/networkpolicy-default-deny.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var np networkingv1.NetworkPolicy
	if err := yaml.UnmarshalStrict(b, &np); err != nil {
		t.Fatal(err)
	}
	if len(np.Spec.Ingress) != 0 || len(np.Spec.Egress) != 0 {
		t.Fatalf("the default policy has rules: %+v", np.Spec)
	}
	if !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) || !slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeEgress) {
		t.Fatalf("the default policy's policyTypes %v: it must deny both ways", np.Spec.PolicyTypes)
	}
	sel, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector)
	if err != nil {
		t.Fatal(err)
	}
	hu := deployHands()
	hu.PodSecurity = grant.PodSecurityUserns
	for what, l := range map[string]map[string]string{
		"plain pod":      Pod(deployHands(), goldenNow, nil).Labels,
		"userns pod":     Pod(hu, goldenNow, nil).Labels,
		"warm pool pod":  {LabelTemplate: "hands"},
		"unlabelled pod": {},
	} {
		if !sel.Matches(labels.Set(l)) {
			t.Errorf("the default policy does not select the %s (labels %v)", what, l)
		}
	}
	if sel.Matches(labels.Set{LabelRole: "broker"}) {
		t.Error("the default policy selects the broker's pods: they would lose the API server and the hands")
	}
}
