package interop_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/kube"
	"github.com/airlockhq/airlock/internal/testenv"
)

// kubelet stands in for a node's kubelet: it turns a pod spec into the
// arguments of podman run (podmanArgs), making each volume the way a
// kubelet does.
type kubelet struct {
	dir string // where volumes' host directories are made
	// secret is the data of the Secret volumes.
	secret map[string][]byte
	// runtimes are the node's RuntimeClasses: the podman global arguments
	// each one runs with; "" is the node's default runtime.
	runtimes map[string][]string
	// emptyDirs are host directories to use for emptyDir volumes, by
	// MountPath (a workspace with files in it); others are made fresh.
	emptyDirs map[string]string
	// host are the arguments this node needs whatever the pod: its network
	// and the rlimits within this host's hard limits (runc sets rlimits
	// the host's hard limit does not allow otherwise).
	host []string
	// usernsBase is the first host uid and gid of the range a
	// user-namespaced pod (hostUsers: false) gets, 65536 of them, as the
	// kubelet gives each such pod its own; 0: this node runs none.
	usernsBase int
	// seccompDir is the node's seccomp root (the kubelet's
	// /var/lib/kubelet/seccomp), where Localhost profiles are found.
	seccompDir string
}

// usernsSize is how many uids and gids a user-namespaced pod maps, as
// the kubelet maps them: 0-65535 in the pod.
const usernsSize = 65536

// podmanArgs translates spec, the one function that decides the hands'
// pod, into podman's global arguments and the arguments of podman run
// (without the image, which comes from the spec, and with the
// container's command and arguments). Anything it cannot translate
// faithfully is an error, never dropped:
//
//   - runAsUser/runAsGroup: --user; fsGroup: --group-add, and the group of
//     the volumes' files (the kubelet chowns them to it);
//   - runAsNonRoot with uid 0: refused, as the kubelet refuses it;
//   - hostUsers false: --uidmap and --gidmap of the pod's 0-65535 to the
//     node's range at usernsBase, and the volumes' files owned by the
//     pod's root and fsGroup as mapped (the kubelet chowns them so);
//   - readOnlyRootFilesystem: --read-only, without podman's extra tmpfs
//     (a kubelet adds none);
//   - capabilities: --cap-drop / --cap-add; privileged: refused;
//   - allowPrivilegeEscalation false: no-new-privileges;
//   - seccomp RuntimeDefault: podman's default profile; Unconfined or
//     none (the kubelet's default): seccomp=unconfined; Localhost: the
//     file of that relative path under the node's seccompDir (a profile
//     the node lacks fails the container's start, as on a node);
//   - procMount Default or none: podman's default masked paths; Unmasked:
//     systempaths=unconfined;
//   - memory limit: --memory (ephemeral storage is the kubelet's eviction,
//     which podman has no equivalent of);
//   - Secret volume: a directory of its keys with defaultMode, read-only;
//   - emptyDir: a fresh host directory, mode 0777 and setgid to fsGroup as
//     the kubelet makes one (the default medium is a directory on the
//     node; a podman tmpfs would not do, runc gives it the mode of the
//     image's directory, root's 0755); Memory medium: a tmpfs;
//   - runtimeClassName: the node's runtime of that name; none: its default.
//
// No host cgroup is mounted (a pod gets none), and no environment is set
// but the container's own (enableServiceLinks false).
func (k *kubelet) podmanArgs(spec corev1.PodSpec) (global, run []string, image string, err error) {
	if len(spec.Containers) != 1 || len(spec.InitContainers) != 0 {
		return nil, nil, "", fmt.Errorf("the pod has %d containers and %d init containers; this stand-in runs one container", len(spec.Containers), len(spec.InitContainers))
	}
	c := spec.Containers[0]
	psc, csc := spec.SecurityContext, c.SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	if csc == nil {
		csc = &corev1.SecurityContext{}
	}
	uid, gid := psc.RunAsUser, psc.RunAsGroup
	if csc.RunAsUser != nil {
		uid = csc.RunAsUser
	}
	if csc.RunAsGroup != nil {
		gid = csc.RunAsGroup
	}
	nonRoot := psc.RunAsNonRoot
	if csc.RunAsNonRoot != nil {
		nonRoot = csc.RunAsNonRoot
	}
	if uid == nil || gid == nil {
		return nil, nil, "", fmt.Errorf("the pod names no runAsUser or runAsGroup; the image's user is not translated")
	}
	if nonRoot != nil && *nonRoot && *uid == 0 {
		return nil, nil, "", fmt.Errorf("runAsNonRoot with runAsUser 0: the kubelet refuses to start it")
	}
	run = append(run, "--user", fmt.Sprintf("%d:%d", *uid, *gid))
	// owner is the host uid of the pod's root, shift what the pod's gids
	// are moved by on the host.
	owner, shift := 0, 0
	if spec.HostUsers != nil && !*spec.HostUsers {
		if k.usernsBase <= 0 {
			return nil, nil, "", fmt.Errorf("hostUsers false: this node has no uid range for user-namespaced pods")
		}
		m := fmt.Sprintf("0:%d:%d", k.usernsBase, usernsSize)
		run = append(run, "--uidmap", m, "--gidmap", m)
		owner, shift = k.usernsBase, k.usernsBase
	}
	fsGroup := -1
	if psc.FSGroup != nil {
		fsGroup = int(*psc.FSGroup)
		run = append(run, "--group-add", strconv.Itoa(fsGroup))
	}
	hostGroup := -1
	if fsGroup >= 0 {
		hostGroup = shift + fsGroup
	}
	if csc.Privileged != nil && *csc.Privileged {
		return nil, nil, "", fmt.Errorf("a privileged container is not translated")
	}
	if csc.ReadOnlyRootFilesystem != nil && *csc.ReadOnlyRootFilesystem {
		run = append(run, "--read-only", "--read-only-tmpfs=false")
	}
	if caps := csc.Capabilities; caps != nil {
		for _, d := range caps.Drop {
			run = append(run, "--cap-drop="+string(d))
		}
		for _, a := range caps.Add {
			run = append(run, "--cap-add="+string(a))
		}
	}
	if csc.AllowPrivilegeEscalation != nil && !*csc.AllowPrivilegeEscalation {
		run = append(run, "--security-opt", "no-new-privileges")
	}
	seccomp := psc.SeccompProfile
	if csc.SeccompProfile != nil {
		seccomp = csc.SeccompProfile
	}
	switch {
	case seccomp == nil || seccomp.Type == corev1.SeccompProfileTypeUnconfined:
		run = append(run, "--security-opt", "seccomp=unconfined")
	case seccomp.Type == corev1.SeccompProfileTypeRuntimeDefault:
		// podman's default profile
	case seccomp.Type == corev1.SeccompProfileTypeLocalhost:
		lp := seccomp.LocalhostProfile
		if lp == nil || *lp == "" || filepath.IsAbs(*lp) || !filepath.IsLocal(*lp) || k.seccompDir == "" {
			return nil, nil, "", fmt.Errorf("seccomp profile Localhost %v: not a path below this node's seccomp directory", lp)
		}
		p := filepath.Join(k.seccompDir, *lp)
		if _, err := os.Stat(p); err != nil {
			return nil, nil, "", fmt.Errorf("seccomp profile Localhost %q: the node has no such profile, and its kubelet would not start the container: %w", *lp, err)
		}
		run = append(run, "--security-opt", "seccomp="+p)
	default:
		return nil, nil, "", fmt.Errorf("seccomp profile %q is not translated", seccomp.Type)
	}
	if pm := csc.ProcMount; pm != nil && *pm == corev1.UnmaskedProcMount {
		run = append(run, "--security-opt", "systempaths=unconfined")
	}
	if m, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
		run = append(run, "--memory", strconv.FormatInt(m.Value(), 10))
	}
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			return nil, nil, "", fmt.Errorf("env %s from a source is not translated", e.Name)
		}
		run = append(run, "-e", e.Name+"="+e.Value)
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
	}
	for _, vm := range c.VolumeMounts {
		v, ok := volumes[vm.Name]
		if !ok {
			return nil, nil, "", fmt.Errorf("volume mount %s names no volume", vm.Name)
		}
		ro := ""
		if vm.ReadOnly {
			ro = ":ro"
		}
		switch {
		case v.Secret != nil:
			dir, err := k.secretDir(v.Name, v.Secret, owner, hostGroup)
			if err != nil {
				return nil, nil, "", err
			}
			run = append(run, "-v", dir+":"+vm.MountPath+":ro")
		case v.EmptyDir != nil && v.EmptyDir.Medium == corev1.StorageMediumMemory:
			run = append(run, "--tmpfs", vm.MountPath)
		case v.EmptyDir != nil:
			dir, ok := k.emptyDirs[vm.MountPath]
			if !ok {
				dir = filepath.Join(k.dir, "emptydir-"+v.Name)
				if err := os.Mkdir(dir, 0o755); err != nil {
					return nil, nil, "", err
				}
			}
			// The kubelet makes an emptyDir 0777, and gives it to fsGroup.
			if err := os.Chmod(dir, 0o777); err != nil {
				return nil, nil, "", err
			}
			if fsGroup >= 0 {
				if err := os.Chown(dir, owner, hostGroup); err != nil {
					return nil, nil, "", err
				}
				if err := os.Chmod(dir, 0o777|os.ModeSetgid); err != nil {
					return nil, nil, "", err
				}
			}
			run = append(run, "-v", dir+":"+vm.MountPath+ro)
		default:
			return nil, nil, "", fmt.Errorf("volume %s: only Secret and emptyDir volumes are translated", v.Name)
		}
	}
	rc := ""
	if spec.RuntimeClassName != nil {
		rc = *spec.RuntimeClassName
	}
	global, ok := k.runtimes[rc]
	if !ok {
		return nil, nil, "", fmt.Errorf("this node has no RuntimeClass %q", rc)
	}
	run = append(run, k.host...)
	switch len(c.Command) {
	case 0:
	case 1:
		run = append(run, "--entrypoint", c.Command[0])
	default:
		b, _ := json.Marshal(c.Command)
		run = append(run, "--entrypoint", string(b))
	}
	return global, run, c.Image, nil
}

// secretDir makes the directory a Secret volume shows: one file per key,
// with the volume's defaultMode, owned by host uid owner (the pod's root)
// and in host group group (the pod's fsGroup; -1: none).
func (k *kubelet) secretDir(name string, s *corev1.SecretVolumeSource, owner, group int) (string, error) {
	dir := filepath.Join(k.dir, "secret-"+name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", err
	}
	mode := os.FileMode(0o644)
	if s.DefaultMode != nil {
		mode = os.FileMode(*s.DefaultMode)
	}
	for key, data := range k.secret {
		p := filepath.Join(dir, key)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			return "", err
		}
		if group >= 0 {
			if err := os.Chown(p, owner, group); err != nil {
				return "", err
			}
		}
		if err := os.Chmod(p, mode); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// doctorReport is what airlock doctor --json prints.
type doctorReport struct {
	Features []struct {
		Name      string `json:"name"`
		Available bool   `json:"available"`
		Required  bool   `json:"required"`
		Detail    string `json:"detail"`
		Fix       string `json:"fix"`
	} `json:"features"`
	Ready bool `json:"ready"`
}

// TestHandsRestrictedPod runs the hands' image the way a node would run
// the pod kube.PodSpec generates (podman as the kubelet, the translation
// in podmanArgs), once under runc, the default runtime, and once under
// gVisor's runsc, the RuntimeClass the pod names with remote.runtime_class
// = "gvisor", and reaches it with the real broker over TLS WebSocket. It
// asserts what the hands do there: under runc the native sandbox cannot
// mount its own /proc (runc masks parts of the container's), so every call
// fails closed with an error naming that and the fix, and airlock doctor
// run in the container says the same; in the pod remote.pod_security =
// "userns" asks for (a user namespace mapped to an unprivileged host
// range, an unmasked /proc, deploy/seccomp/hands.json as the node's
// Localhost profile) the sandbox starts, read_file and shell succeed, and
// the sandbox is locked down (usernsPod); under runsc the calls succeed if
// the doctor finds everything the sandbox needs, and otherwise fail with
// an error naming every feature it lacks. Without a cgroup, a call whose
// grant does not accept unenforced memory and process limits is refused,
// saying so.
func TestHandsRestrictedPod(t *testing.T) {
	tag := handsImage(t)
	runsc, runscErr := exec.LookPath("runsc")
	cases := []struct {
		name, class string
		global      []string
		unmasked    bool
		podSecurity string
		skip        func(t *testing.T)
	}{
		{name: "runc", global: []string{"--runtime", "runc"}},
		// remote.pod_security = "userns": a user-namespaced pod with an
		// unmasked /proc and airlock's seccomp profile, in which the
		// native sandbox starts.
		{name: "runc-userns", global: []string{"--runtime", "runc"}, podSecurity: grant.PodSecurityUserns},
		// procMount: Unmasked, which the restricted standard forbids: the
		// /proc mount then succeeds, and RuntimeDefault seccomp refuses
		// the next step.
		{name: "runc-unmasked", global: []string{"--runtime", "runc"}, unmasked: true},
		{name: "runsc", class: "gvisor", global: []string{"--runtime", runsc, "--runtime-flag", "network=host"}, skip: func(t *testing.T) {
			if runscErr != nil {
				testenv.RequireFeature(t, "gVisor's runsc is not installed (apt-get install runsc)")
			}
			// runsc itself needs things of the host (its platform, its
			// own namespaces): a host where it cannot start a container
			// at all says nothing about the hands.
			out, err := exec.Command("podman", "--runtime", runsc, "--runtime-flag", "network=host", "run", "--rm",
				"--network=host", "--entrypoint", "/bin/echo", tag, "ok").CombinedOutput()
			if err != nil {
				t.Skipf("runsc cannot start a container on this host: %v\n%s", err, out)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.skip != nil {
				tc.skip(t)
			}
			restrictedPod(t, tag, tc.class, tc.global, tc.unmasked, tc.podSecurity)
		})
	}
}

// restrictedPod is one runtime's case of TestHandsRestrictedPod.
func restrictedPod(t *testing.T, tag, class string, global []string, unmasked bool, podSecurity string) {
	w := newWorkspace(t)
	dir := t.TempDir()
	userns := podSecurity == grant.PodSecurityUserns
	mounts := []kube.Mount{{Path: w.root, Writable: true}}
	// The userns case grants a read-only path too, to show that the
	// sandbox in it cannot write there.
	ro := ""
	if userns {
		ro = filepath.Join(filepath.Dir(w.root), "ro")
		if err := os.Mkdir(ro, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ro, "f"), []byte("read-only\n"), 0o666); err != nil {
			t.Fatal(err)
		}
		mounts = append(mounts, kube.Mount{Path: ro})
	}
	// The pod a broker whose grant accepts unenforced limits asks for.
	h := kube.Hands{
		Name: "airlock-test-1", Namespace: "agents", Session: "test", Broker: "test", Template: "hands",
		Image: tag, Secret: "airlock-test", Expires: time.Now().Add(time.Hour),
		Mounts: mounts, Limits: grant.DefaultLimits,
		RuntimeClass: class, AllowUnenforced: true, PodSecurity: podSecurity,
	}
	spec := kube.PodSpec(&h)
	if unmasked {
		pm := corev1.UnmaskedProcMount
		spec.Containers[0].SecurityContext.ProcMount = &pm
	}
	certFile, keyFile, _ := selfSigned(t, t.TempDir())
	cert, _ := os.ReadFile(certFile)
	key, _ := os.ReadFile(keyFile)
	token := "restricted-pod-token-" + randomHex(8)
	k := &kubelet{
		dir:       dir,
		secret:    map[string][]byte{"token": []byte(token), "tls.crt": cert, "tls.key": key},
		runtimes:  map[string][]string{"": {"--runtime", "runc"}, "gvisor": global},
		emptyDirs: map[string]string{w.root: w.root, ro: ro},
		// The pod's IP is this host's loopback: the pod shares the host's
		// network namespace, and the tool-server listens on loopback only.
		host: []string{"--network=host", "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024"},
		// An unprivileged range no user of this host has.
		usernsBase: 30000 * usernsSize,
		seccompDir: filepath.Join(dir, "seccomp"),
	}
	// The node's seccomp profile, installed as deploy/seccomp/installer.yaml
	// installs it.
	profile, err := os.ReadFile("../../deploy/seccomp/hands.json")
	if err != nil {
		t.Fatal(err)
	}
	installed := filepath.Join(k.seccompDir, kube.SeccompProfile)
	if err := os.MkdirAll(filepath.Dir(installed), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(installed, profile, 0o644); err != nil {
		t.Fatal(err)
	}
	if class == "" {
		k.runtimes[""] = global
	}
	g, run, image, err := k.podmanArgs(spec)
	if err != nil {
		t.Fatal(err)
	}
	args := slices.Clone(spec.Containers[0].Args)
	for i := range args {
		if args[i] == "--listen" {
			args[i+1] = "127.0.0.1:0" // startPod reads the port it bound
		}
	}

	// airlock doctor in the same container.
	doctor := append(append(slices.Clone(g), "run", "--rm"), run...)
	doctor = append(doctor, image, "doctor", "--json")
	out, _ := exec.Command("podman", doctor...).Output()
	var rep doctorReport
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("airlock doctor --json in the pod: %v\n%s", err, out)
	}
	var missing []string
	var trial string
	for _, f := range rep.Features {
		if f.Name == "sandbox start" && !f.Available {
			trial = f.Detail + "; to fix: " + f.Fix
		}
		if f.Required && !f.Available && f.Name != "cgroups" && f.Name != "sandbox start" {
			missing = append(missing, f.Name)
		}
	}
	t.Logf("airlock doctor in the pod: missing %v; sandbox start: %q", missing, trial)

	addr := startPod(t, g, run, image, args)

	tokenFile, caFile := filepath.Join(dir, "broker-token"), filepath.Join(dir, "broker-ca.pem")
	os.WriteFile(tokenFile, []byte(token), 0o600)
	os.WriteFile(caFile, cert, 0o644)
	allow := filepath.Join(dir, "allow.toml")
	roGrant := ""
	if ro != "" {
		roGrant = fmt.Sprintf("read_only = [%q]\n", ro)
	}
	os.WriteFile(allow, []byte(fmt.Sprintf("[paths]\nread_write = [%q]\n%s[limits]\nunenforced = \"allow\"\n", w.root, roGrant)), 0o644)
	// call runs a tool through the broker; grantArgs say its grant.
	call := func(grantArgs []string, tool, input string) (string, error) {
		t.Helper()
		a := append(append([]string{"call"}, grantArgs...), "--remote", "wss://"+addr, "--remote-token-file", tokenFile, "--remote-ca", caFile, tool, input)
		c := exec.Command(airlock(t), a...)
		c.Env = append(os.Environ(), "AIRLOCK_STATE_DIR="+w.records)
		out, err := c.CombinedOutput()
		return string(out), err
	}
	read, shell := `{"path":"hello.txt"}`, `{"command":"echo restricted-$((6*7))"}`
	failsWith := func(what string, grantArgs []string, tool, input string, want ...string) {
		t.Helper()
		out, err := call(grantArgs, tool, input)
		t.Logf("%s: %s: %v\n%s", what, tool, err, out)
		if err == nil {
			t.Errorf("%s: %s ran: %s", what, tool, out)
			return
		}
		for _, s := range want {
			if !strings.Contains(out, s) {
				t.Errorf("%s: %s failed without saying %q:\n%s", what, tool, s, out)
			}
		}
	}
	root := []string{"--root", w.root}
	// Without a cgroup, a call whose grant does not accept unenforced
	// limits is refused, saying that both grants must accept them.
	refuseWant := []string{"a cgroup to enforce the memory limit (1GiB) and the process limit (256)",
		"these hands have no cgroup of their own", `limits.unenforced = "allow"`, "airlock tool-server --allow-unenforced-limits",
		"the broker's grant does not, these hands' does"}

	if userns {
		usernsPod(t, call, allow, ro, w.root, k.usernsBase, missing, trial)
		failsWith("grant refusing unenforced limits", root, "read_file", read, refuseWant...)
		return
	}
	if unmasked {
		hostWant := []string{"sethostname in the sandbox's UTS namespace", "setting the hostname: operation not permitted", "seccomp", `remote.pod_security = "userns"`}
		for _, s := range hostWant {
			if !strings.Contains(trial, s) {
				t.Errorf("airlock doctor in the pod does not say %q; sandbox start: %q", s, trial)
			}
		}
		failsWith("grant allowing unenforced limits", []string{"--grant", allow}, "shell", shell, hostWant...)
		return
	}
	if class == "" {
		// runc: the sandbox's init cannot mount its own /proc.
		procWant := []string{"a fresh /proc for the sandbox", "mounting /proc: operation not permitted", "masks parts of this container's /proc", `remote.runtime_class = "gvisor"`, `remote.pod_security = "userns"`}
		for _, s := range procWant {
			if !strings.Contains(trial, s) {
				t.Errorf("airlock doctor in the pod does not say %q; sandbox start: %q", s, trial)
			}
		}
		if len(missing) > 0 {
			t.Errorf("airlock doctor in the pod finds missing %v; under runc only the trial fails", missing)
		}
		failsWith("grant refusing unenforced limits", root, "read_file", read, refuseWant...)
		failsWith("grant allowing unenforced limits", []string{"--grant", allow}, "read_file", read, procWant...)
		failsWith("grant allowing unenforced limits", []string{"--grant", allow}, "shell", shell, procWant...)
		return
	}
	if len(missing) > 0 || trial != "" {
		// This runsc lacks something the sandbox needs: every call names
		// all of it.
		want := []string{"this host lacks"}
		if len(missing) > 0 {
			want = append(want, strings.Join(missing, ", "))
		}
		t.Logf("runsc lacks %v: the calls must fail closed naming it", missing)
		failsWith("grant allowing unenforced limits", []string{"--grant", allow}, "read_file", read, want...)
		failsWith("grant allowing unenforced limits", []string{"--grant", allow}, "shell", shell, want...)
		return
	}
	failsWith("grant refusing unenforced limits", root, "read_file", read, refuseWant...)
	got, err := call([]string{"--grant", allow}, "read_file", read)
	if err != nil || !strings.Contains(got, "hello from interop") || !strings.Contains(got, "NOT ENFORCED") {
		t.Errorf("read_file under runsc: %v\n%s", err, got)
	}
	got, err = call([]string{"--grant", allow}, "shell", shell)
	if err != nil || !strings.Contains(got, "restricted-42") {
		t.Errorf("shell under runsc: %v\n%s", err, got)
	}
}

// usernsPod asserts what the hands do in the userns pod: airlock doctor
// there finds everything the sandbox needs, read_file and shell run
// through the real broker (their memory and process limits NOT ENFORCED:
// the pod has no cgroup of its own), and the sandbox in the pod is locked
// down: no capabilities, no_new_privs, a seccomp filter, no network but
// lo, PID 1 out of reach, the read-only grant not writable, and what it
// writes is owned on the host by a uid of the pod's unprivileged range.
func usernsPod(t *testing.T, call func([]string, string, string) (string, error), allow, ro, rw string, base int, missing []string, trial string) {
	t.Helper()
	if len(missing) > 0 || trial != "" {
		t.Errorf("airlock doctor in the userns pod: missing %v; sandbox start: %q; want all there", missing, trial)
	}
	grantArgs := []string{"--grant", allow}
	got, err := call(grantArgs, "read_file", `{"path":"hello.txt"}`)
	if err != nil || !strings.Contains(got, "hello from interop") || !strings.Contains(got, "NOT ENFORCED") {
		t.Errorf("read_file in the userns pod: %v\n%s", err, got)
	}
	got, err = call(grantArgs, "shell", `{"command":"echo restricted-$((6*7))"}`)
	if err != nil || !strings.Contains(got, "restricted-42") || !strings.Contains(got, "NOT ENFORCED") {
		t.Errorf("shell in the userns pod: %v\n%s", err, got)
	}
	script := `grep -E '^(CapEff|CapPrm|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status
printf 'ifaces '; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\n' ' '; echo
echo x > ` + ro + `/f 2>/dev/null; echo ro-rc=$?
touch ` + ro + `/new 2>/dev/null; echo ro-new-rc=$?
cat /proc/1/environ >/dev/null 2>&1; echo env1-rc=$?
readlink /proc/1/root >/dev/null 2>&1; echo root1-rc=$?
echo made > ` + rw + `/made-in-pod; echo rw-rc=$?`
	in, _ := json.Marshal(map[string]string{"command": script})
	got, err = call(grantArgs, "shell", string(in))
	t.Logf("the sandbox in the userns pod:\n%s", got)
	if err != nil {
		t.Fatalf("shell in the userns pod: %v\n%s", err, got)
	}
	for _, want := range []string{"CapEff:\t0000000000000000", "CapPrm:\t0000000000000000", "CapAmb:\t0000000000000000",
		"NoNewPrivs:\t1", "Seccomp:\t2", "ifaces lo \n", "rw-rc=0"} {
		if !strings.Contains(got, want) {
			t.Errorf("the sandbox in the userns pod: want %q in:\n%s", want, got)
		}
	}
	for _, rc := range []string{"ro-rc=0", "ro-new-rc=0", "env1-rc=0", "root1-rc=0"} {
		if strings.Contains(got, rc+"\n") {
			t.Errorf("the sandbox in the userns pod: %s", rc)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(ro, "f")); string(b) != "read-only\n" {
		t.Errorf("the read-only grant's file now holds %q", b)
	}
	if _, err := os.Stat(filepath.Join(ro, "new")); err == nil {
		t.Error("a file was made in the read-only grant")
	}
	fi, err := os.Stat(filepath.Join(rw, "made-in-pod"))
	if err != nil {
		t.Fatalf("the file the sandbox wrote: %v", err)
	}
	if uid := int(fi.Sys().(*syscall.Stat_t).Uid); uid < base || uid >= base+usernsSize {
		t.Errorf("the sandbox's file is owned by host uid %d, want one of the pod's range %d-%d", uid, base, base+usernsSize-1)
	} else {
		t.Logf("the sandbox's file is owned by host uid %d (the pod's uid %d)", uid, uid-base)
	}
}

// startPod runs the pod's container (podman's global arguments g, run's,
// the image and the container's arguments, whose --listen has port 0) until
// the test ends, and returns the address its tool-server says it listens
// on. A port picked free and released for the pod to bind could be taken
// by another process in between.
func startPod(t *testing.T, g, run []string, image string, args []string) (addr string) {
	t.Helper()
	name := "airlock-restricted-" + randomHex(4)
	start := append(append(slices.Clone(g), "run", "-d", "--rm", "--name", name), run...)
	start = append(append(start, image), args...)
	if out, err := exec.Command("podman", start...).CombinedOutput(); err != nil {
		t.Fatalf("podman %s: %v\n%s", strings.Join(start, " "), err, out)
	}
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := exec.Command("podman", "logs", name).CombinedOutput()
			t.Logf("the hands' log:\n%s", logs)
		}
		exec.Command("podman", "rm", "-f", "-t", "0", name).Run()
	})
	return listeningAt(t, append(slices.Clone(g), "logs", name))
}
