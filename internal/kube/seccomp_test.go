package kube

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// The userns pods' seccomp profile, deploy/seccomp/hands.json, is
// containers-common's default profile (the RuntimeDefault of podman and
// CRI-O) as it applies to a container without capabilities, written in
// the plain OCI runtime-spec format that every runtime reads from a
// Localhost profile (containerd ignores the fields that make rules depend
// on capabilities), with seccompAdditions allowed. TestSeccompProfile
// regenerates it with -update from the host's
// /usr/share/containers/seccomp.json.
const (
	seccompFile = "../../deploy/seccomp/hands.json"
	// seccompSource is the containers-common profile it was made from:
	// Debian 12's golang-github-containers-common 0.50.1+ds1-4.
	seccompSource       = "/usr/share/containers/seccomp.json"
	seccompSourceSHA256 = "cc374cf23846ce1f62f4dc807a8e2b8673c783c6f56cb475467621035d281e6c"
)

// seccompAdditions are the syscalls the profile allows beyond
// containers-common's default for a container without capabilities, and
// why; docs/kubernetes.md repeats them. Everything else the native
// sandbox's setup does (unshare and clone into new namespaces, mount,
// umount2, pivot_root, open_tree, move_mount, mount_setattr, the Landlock
// and seccomp calls, openat2, pidfd_open) the default allows already, and
// the kernel's own checks bound it: in the pod's user namespace it acts
// only on namespaces the pod owns. Found by running the sandbox in the
// pod under the profile until it started (TestHandsRestrictedPod's userns
// case); airlock's own seccomp filter applies inside the sandbox still.
var seccompAdditions = map[string]string{
	"sethostname": "the sandbox's init names its own UTS namespace; the default allows it only with CAP_SYS_ADMIN, which a pod that drops ALL never has, and a UTS namespace the sandbox owns is all it can name",
}

// ociSeccomp is the OCI runtime spec's LinuxSeccomp: the only fields a
// Localhost profile may use to mean the same to runc, crun, containerd
// and CRI-O.
type ociSeccomp struct {
	DefaultAction   string       `json:"defaultAction"`
	DefaultErrnoRet *uint        `json:"defaultErrnoRet,omitempty"`
	Architectures   []string     `json:"architectures,omitempty"`
	Syscalls        []ociSyscall `json:"syscalls"`
}

type ociSyscall struct {
	Names    []string `json:"names"`
	Action   string   `json:"action"`
	ErrnoRet *uint    `json:"errnoRet,omitempty"`
	Args     []ociArg `json:"args,omitempty"`
}

type ociArg struct {
	Index    uint   `json:"index"`
	Value    uint64 `json:"value"`
	ValueTwo uint64 `json:"valueTwo"`
	Op       string `json:"op"`
}

// flattenSeccomp is containers-common's profile src as it applies to a
// container without capabilities, with add allowed. A rule that needs a
// capability is dropped, one that applies without it is kept
// unconditionally (an architecture's own rule too: a runtime skips a
// name its architecture lacks), the names in add are taken out of every
// rule that refuses them, and the architectures are left out, so that
// only the node's own system-call ABI is allowed (containers-common's
// archMap lets 32-bit x86 and x32 in too; a flat list of architectures
// would make libseccomp refuse the whole profile on another node).
func flattenSeccomp(t *testing.T, src []byte, add []string) []byte {
	t.Helper()
	var in struct {
		DefaultAction   string `json:"defaultAction"`
		DefaultErrnoRet *uint  `json:"defaultErrnoRet"`
		Syscalls        []struct {
			ociSyscall
			Includes struct {
				Caps   []string `json:"caps"`
				Arches []string `json:"arches"`
			} `json:"includes"`
		} `json:"syscalls"`
	}
	if err := json.Unmarshal(src, &in); err != nil {
		t.Fatalf("%s: %v", seccompSource, err)
	}
	out := ociSeccomp{DefaultAction: in.DefaultAction, DefaultErrnoRet: in.DefaultErrnoRet}
	for _, r := range in.Syscalls {
		if len(r.Includes.Caps) > 0 {
			continue
		}
		s := r.ociSyscall
		if s.Action != "SCMP_ACT_ALLOW" {
			s.Names = slices.DeleteFunc(slices.Clone(s.Names), func(n string) bool { return slices.Contains(add, n) })
		}
		if len(s.Names) > 0 {
			out.Syscalls = append(out.Syscalls, s)
		}
	}
	out.Syscalls = append(out.Syscalls, ociSyscall{Names: add, Action: "SCMP_ACT_ALLOW"})
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// allowed are the syscalls a profile allows unconditionally, and those it
// allows for some arguments.
func allowed(p ociSeccomp) (always, some map[string]bool) {
	always, some = map[string]bool{}, map[string]bool{}
	for _, s := range p.Syscalls {
		if s.Action != "SCMP_ACT_ALLOW" {
			continue
		}
		for _, n := range s.Names {
			if len(s.Args) == 0 {
				always[n] = true
			} else {
				some[n] = true
			}
		}
	}
	return always, some
}

// TestSeccompProfile checks deploy/seccomp/hands.json: plain OCI format,
// refusing by default, sethostname allowed, the kernel's riskiest
// surfaces not; and, where this host has the containers-common profile it
// was made from, that it is exactly that profile for a container without
// capabilities plus seccompAdditions (-update rewrites it).
func TestSeccompProfile(t *testing.T) {
	var add []string
	for n := range seccompAdditions {
		add = append(add, n)
	}
	slices.Sort(add)
	if src, err := os.ReadFile(seccompSource); err != nil {
		t.Logf("%v: checking the shipped profile alone", err)
	} else if sum := sha256.Sum256(src); hex.EncodeToString(sum[:]) != seccompSourceSHA256 {
		t.Logf("%s is not the one the profile was made from (sha256 %x): checking the shipped profile alone", seccompSource, sum)
	} else {
		want := flattenSeccomp(t, src, add)
		if *update {
			if err := os.WriteFile(seccompFile, want, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(seccompFile)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not %s for a container without capabilities plus %v (go test ./internal/kube -run TestSeccompProfile -update)", seccompFile, seccompSource, add)
		}
	}
	b, err := os.ReadFile(seccompFile)
	if err != nil {
		t.Fatal(err)
	}
	var p ociSeccomp
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&p); err != nil {
		t.Fatalf("%s is not an OCI runtime-spec seccomp profile: %v", seccompFile, err)
	}
	if p.DefaultAction != "SCMP_ACT_ERRNO" || len(p.Architectures) != 0 {
		t.Errorf("default action %s, architectures %v: want SCMP_ACT_ERRNO and none (the node's own ABI only)", p.DefaultAction, p.Architectures)
	}
	always, some := allowed(p)
	for _, n := range add {
		if !always[n] {
			t.Errorf("%s does not allow %s", seccompFile, n)
		}
	}
	for _, n := range []string{"mount", "umount2", "pivot_root", "unshare", "clone", "clone3", "open_tree", "move_mount", "mount_setattr",
		"landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self", "seccomp", "openat2", "pidfd_open"} {
		if !always[n] {
			t.Errorf("%s does not allow %s, which the native sandbox's setup needs", seccompFile, n)
		}
	}
	for _, n := range []string{"setdomainname", "bpf", "perf_event_open", "kexec_load", "kexec_file_load", "init_module", "finit_module",
		"delete_module", "open_by_handle_at", "add_key", "request_key", "userfaultfd", "io_uring_setup", "io_uring_enter", "chroot",
		"fanotify_init", "quotactl", "acct", "swapon", "iopl", "ioperm", "clock_settime", "settimeofday", "vhangup", "lookup_dcookie"} {
		if always[n] || some[n] {
			t.Errorf("%s allows %s", seccompFile, n)
		}
	}
}

// seccompInstaller is deploy/seccomp/installer.yaml: a ConfigMap holding
// the profile and a DaemonSet whose pods copy it into every node's
// kubelet seccomp directory, as SeccompProfile names it, then wait.
func seccompInstaller(t *testing.T) *corev1.List {
	t.Helper()
	profile, err := os.ReadFile(seccompFile)
	if err != nil {
		t.Fatal(err)
	}
	const ns, name = "kube-system", "airlock-seccomp"
	dir, file, _ := strings.Cut(SeccompProfile, "/")
	labels := map[string]string{"app.kubernetes.io/name": name, LabelManagedBy: ManagedBy}
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Data:       map[string]string{file: string(profile)},
	}
	no, yes := false, true
	root, pause := int64(0), int64(65535)
	sc := func(uid int64) *corev1.SecurityContext {
		return &corev1.SecurityContext{
			RunAsUser: &uid, AllowPrivilegeEscalation: &no, ReadOnlyRootFilesystem: &yes, Privileged: &no,
			Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		}
	}
	dirOrCreate := corev1.HostPathDirectoryOrCreate
	ds := &appsv1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app.kubernetes.io/name": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					AutomountServiceAccountToken: &no,
					EnableServiceLinks:           &no,
					Tolerations:                  []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
					InitContainers: []corev1.Container{{
						Name: "install",
						// Any image with /bin/sh, cp and mv: the hands' own.
						Image:           "registry.example/airlock-hands@sha256:0123",
						Command:         []string{"/bin/sh", "-c", "cp /profile/" + file + " /seccomp/." + file + ".new && mv /seccomp/." + file + ".new /seccomp/" + file},
						SecurityContext: sc(root),
						VolumeMounts: []corev1.VolumeMount{
							{Name: "profile", MountPath: "/profile", ReadOnly: true},
							{Name: "seccomp", MountPath: "/seccomp"},
						},
					}},
					Containers: []corev1.Container{{
						Name: "pause", Image: "registry.k8s.io/pause:3.10", SecurityContext: sc(pause),
						Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("16Mi")}},
					}},
					Volumes: []corev1.Volume{
						{Name: "profile", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}},
						{Name: "seccomp", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/kubelet/seccomp/" + dir, Type: &dirOrCreate}}},
					},
				},
			},
		},
	}
	l := &corev1.List{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "List"}}
	for _, o := range []runtime.Object{cm, ds} {
		b, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		// Without the empty status a typed object marshals.
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "status")
		if b, err = json.Marshal(m); err != nil {
			t.Fatal(err)
		}
		l.Items = append(l.Items, runtime.RawExtension{Raw: b})
	}
	return l
}

// TestSeccompInstaller keeps deploy/seccomp/installer.yaml the profile's
// installer (-update rewrites it).
func TestSeccompInstaller(t *testing.T) {
	golden(t, "../../deploy/seccomp/installer.yaml", seccompInstaller(t))
}
