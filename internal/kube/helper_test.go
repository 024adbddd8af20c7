package kube

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	authv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	ktesting "k8s.io/client-go/testing"

	"github.com/airlockhq/airlock/internal/kube/kubereq"
	"github.com/airlockhq/airlock/internal/procid"
	"github.com/airlockhq/airlock/internal/toolserver"
)

// helperDial is the broker's side of the airlock-kube helper, in process:
// each connection runs Connect over a pair of pipes, as a spawned helper
// would over its stdin and stdout. done receives each Connect's error.
func helperDial(t testing.TB, c *cluster, done chan<- error) func(context.Context) (toolserver.Conn, error) {
	return helperDialWith(t, c, done, nil)
}

// helperDialWith is helperDial with edit (if not nil) applied to the
// request before it is encoded.
func helperDialWith(t testing.TB, c *cluster, done chan<- error, edit func(*kubereq.Request)) func(context.Context) (toolserver.Conn, error) {
	req, err := kubereq.FromGrant("kube://"+testNS+"/hands", c.grant)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(&req)
	}
	req, err = kubereq.Decode(req.Encode())
	if err != nil {
		t.Fatal(err)
	}
	return func(context.Context) (toolserver.Conn, error) {
		toHelper, fromBroker := io.Pipe()
		toBroker, fromHelper := io.Pipe()
		go func() {
			err := Connect(context.Background(), req, &ConnectOptions{Clients: c.clients, Port: c.port}, toHelper, fromHelper)
			fromHelper.CloseWithError(io.EOF)
			toHelper.Close()
			done <- err
		}()
		return toolserver.StreamConn(toBroker, fromBroker, closerFunc(func() error {
			fromBroker.Close()
			toBroker.Close()
			return nil
		})), nil
	}
}

type closerFunc func() error

func (f closerFunc) Close() error { return f() }

// TestHelperRelay: the helper's connection obtains a pod, relays a real
// call to it, and when the pod dies ends; the broker's reconnect makes a
// new helper connection with a new pod; closing the broker's end releases
// everything.
func TestHelperRelay(t *testing.T) {
	c := newCluster(t, false)
	done := make(chan error, 4)
	b, err := toolserver.New(context.Background(), &toolserver.Options{
		Endpoint: "kube://" + testNS + "/hands", Dial: helperDial(t, c, done),
		Heartbeat: 200 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	first := c.waitStarted()
	readA(t, c, b)
	c.kill(first)
	if err := <-done; err == nil {
		t.Fatal("the helper's connection to dead hands ended without an error")
	}
	c.waitStarted()
	readA(t, c, b)
	b.Close()
	if err := <-done; err != nil {
		t.Fatalf("the helper's connection ended with %v after the broker closed it", err)
	}
	if got := left(t, c, ""); len(got) != 0 {
		t.Fatalf("left behind: %v", got)
	}
}

// TestHelperWorkspaceClaim: through the helper, a request with a
// workspace size gets the connection's pod a claim of that size, where
// the agent-sandbox API is served too (warm pods cannot mount it), and
// the broker's closing removes it with the rest.
func TestHelperWorkspaceClaim(t *testing.T) {
	c := newCluster(t, true)
	done := make(chan error, 4)
	b, err := toolserver.New(context.Background(), &toolserver.Options{
		Endpoint:  "kube://" + testNS + "/hands",
		Dial:      helperDialWith(t, c, done, func(r *kubereq.Request) { r.WorkspaceSize = "5Gi" }),
		Heartbeat: 200 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	first := c.waitStarted()
	readA(t, c, b)
	ctx := context.Background()
	p, err := c.kube.CoreV1().Pods(testNS).Get(ctx, first, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the helper's hands are not a plain pod: %v", err)
	}
	claim := workspaceClaim(t, p, c.root)
	pvc, err := c.kube.CoreV1().PersistentVolumeClaims(testNS).Get(ctx, claim, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("pod %s's workspace claim %q: %v", first, claim, err)
	}
	if q := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; q.String() != "5Gi" {
		t.Errorf("claim size %s, want 5Gi", q.String())
	}
	b.Close()
	if err := <-done; err != nil {
		t.Fatalf("the helper's connection ended with %v after the broker closed it", err)
	}
	if got := left(t, c, ""); len(got) != 0 {
		t.Fatalf("left behind: %v", got)
	}
}

// deadBroker is the broker id of a process of this host that has exited.
func deadBroker(t testing.TB) string {
	cmd := exec.Command("/bin/true")
	if err := cmd.Start(); err != nil {
		t.Skipf("no /bin/true: %v", err)
	}
	id := procid.Of(cmd.Process.Pid)
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if id == "" || id.Alive() {
		t.Skip("cannot name an exited process here")
	}
	return hostLabel() + "_" + string(id)
}

// TestSweepAfterBrokerCrash: what a killed broker left (pod, Secret,
// policy, workspace claim, SandboxClaim) and what is past its expiry is removed; a live broker's
// objects, another host's before expiry, and objects not airlock's stay.
func TestSweepAfterBrokerCrash(t *testing.T) {
	c := newCluster(t, true)
	ctx := context.Background()
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	past := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	objs := []struct {
		name, broker, expires string
		managed               bool
	}{
		{"crashed", deadBroker(t), future, true},
		{"expired", BrokerID(), past, true},
		{"live", BrokerID(), future, true},
		{"other-host", "elsewhere_1-2", future, true},
		{"not-ours", deadBroker(t), past, false},
	}
	for _, o := range objs {
		m := metav1.ObjectMeta{Name: o.name, Namespace: testNS, Labels: map[string]string{LabelBroker: o.broker, LabelSession: o.name}, Annotations: map[string]string{AnnotationExpiry: o.expires}}
		if o.managed {
			m.Labels[LabelManagedBy] = ManagedBy
		}
		if _, err := c.kube.CoreV1().Pods(testNS).Create(ctx, &corev1.Pod{ObjectMeta: m}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.kube.CoreV1().Secrets(testNS).Create(ctx, &corev1.Secret{ObjectMeta: m}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.kube.NetworkingV1().NetworkPolicies(testNS).Create(ctx, &networkingv1.NetworkPolicy{ObjectMeta: m}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.kube.CoreV1().PersistentVolumeClaims(testNS).Create(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: m}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": SandboxGroupVersion.String(), "kind": "SandboxClaim"}}
		u.SetName(o.name)
		u.SetNamespace(testNS)
		u.SetLabels(m.Labels)
		u.SetAnnotations(m.Annotations)
		if _, err := c.dyn.Resource(ClaimResource).Namespace(testNS).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := Sweep(ctx, c.clients, testNS, true)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, l := range removed {
		got[l.Name]++
	}
	if got["crashed"] != 5 || got["expired"] != 5 || len(got) != 2 {
		t.Fatalf("removed %v, want the 5 objects each of crashed and expired", removed)
	}
	for _, keep := range []string{"live", "other-host", "not-ours"} {
		if n := len(left(t, c, keep)); n != 5 {
			t.Errorf("%s: %d kinds left, want all 5", keep, n)
		}
	}
}

// TestDoctor: the report names the missing template, RuntimeClass and
// permissions, and passes once the cluster has them.
func TestDoctor(t *testing.T) {
	c := newCluster(t, false)
	var mu sync.Mutex
	allow := false
	c.kube.PrependReactor("create", "selfsubjectaccessreviews", func(a ktesting.Action) (bool, runtime.Object, error) {
		r := a.(ktesting.CreateAction).GetObject().(*authv1.SelfSubjectAccessReview).DeepCopy()
		mu.Lock()
		r.Status.Allowed = allow
		mu.Unlock()
		return true, r, nil
	})
	c.kube.Discovery().(*fakediscovery.FakeDiscovery).Resources = append(c.kube.Discovery().(*fakediscovery.FakeDiscovery).Resources,
		&metav1.APIResourceList{GroupVersion: "networking.k8s.io/v1", APIResources: []metav1.APIResource{{Name: "networkpolicies"}}})
	run := func(args ...string) (int, string) {
		var out, errb strings.Builder
		code := mainWith(context.Background(), append([]string{"doctor"}, args...), nil, &out, &errb, func(string) string { return "" },
			func() (*Clients, error) { return c.clients, nil })
		return code, out.String() + errb.String()
	}
	code, out := run("--runtime-class", "gvisor", "kube://"+testNS+"/other")
	for _, want := range []string{"MISSING PodTemplate agents/other", "MISSING RuntimeClass gvisor", "MISSING may create pods", "absent  agent-sandbox API"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor's report lacks %q:\n%s", want, out)
		}
	}
	if code != 1 {
		t.Errorf("exit %d with missing pieces, want 1", code)
	}
	mu.Lock()
	allow = true
	mu.Unlock()
	if _, err := c.kube.NodeV1().RuntimeClasses().Create(context.Background(), &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "gvisor"}, Handler: "runsc"}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	code, out = run("--json", "--runtime-class", "gvisor", "kube://"+testNS+"/hands")
	var rep struct{ Ready bool }
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 || !rep.Ready {
		t.Fatalf("exit %d, report %s", code, out)
	}
}

// TestDoctorPodSecurity: the report names the pods' security profile,
// and for userns pods whether the namespace's Pod Security label admits
// them: restricted does not (procMount), baseline does from v1.35 only,
// no label leaves the cluster's default, and a namespace the broker may
// not read is reported as unknown, not as missing.
func TestDoctorPodSecurity(t *testing.T) {
	c := newCluster(t, false)
	c.kube.PrependReactor("create", "selfsubjectaccessreviews", func(a ktesting.Action) (bool, runtime.Object, error) {
		r := a.(ktesting.CreateAction).GetObject().(*authv1.SelfSubjectAccessReview).DeepCopy()
		r.Status.Allowed = true
		return true, r, nil
	})
	c.kube.Discovery().(*fakediscovery.FakeDiscovery).Resources = append(c.kube.Discovery().(*fakediscovery.FakeDiscovery).Resources,
		&metav1.APIResourceList{GroupVersion: "networking.k8s.io/v1", APIResources: []metav1.APIResource{{Name: "networkpolicies"}}})
	run := func(args ...string) (int, string) {
		var out, errb strings.Builder
		code := mainWith(context.Background(), append([]string{"doctor"}, append(args, "kube://"+testNS+"/hands")...), nil, &out, &errb, func(string) string { return "" },
			func() (*Clients, error) { return c.clients, nil })
		return code, out.String() + errb.String()
	}
	label := func(labels map[string]string) {
		t.Helper()
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testNS, Labels: labels}}
		if _, err := c.kube.CoreV1().Namespaces().Update(context.Background(), ns, metav1.UpdateOptions{}); apierrors.IsNotFound(err) {
			_, err = c.kube.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
		} else if err != nil {
			t.Fatal(err)
		}
	}
	check := func(name string, wantCode int, want ...string) {
		t.Helper()
		code, out := run("--pod-security", "userns")
		if code != wantCode {
			t.Errorf("%s: exit %d, want %d:\n%s", name, code, wantCode, out)
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("%s: the report lacks %q:\n%s", name, w, out)
			}
		}
	}
	if code, out := run(); code != 0 || !strings.Contains(out, "ok      pod security restricted") {
		t.Errorf("restricted pods: exit %d:\n%s", code, out)
	}
	check("namespace not readable", 0, "ok      pod security userns: user-namespaced pods", "/var/lib/kubelet/seccomp/airlock/hands.json",
		"absent  namespace agents admits them: cannot tell (no such namespace)")
	label(map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})
	check("restricted namespace", 1, `MISSING namespace agents admits them: pod-security.kubernetes.io/enforce="restricted": the restricted standard refuses procMount: Unmasked`)
	label(map[string]string{"pod-security.kubernetes.io/enforce": "baseline", "pod-security.kubernetes.io/enforce-version": "v1.34"})
	check("baseline v1.34", 1, "baseline allows procMount: Unmasked in a user-namespaced pod only from v1.35")
	label(map[string]string{"pod-security.kubernetes.io/enforce": "baseline", "pod-security.kubernetes.io/enforce-version": "latest"})
	check("baseline latest", 0, `ok      namespace agents admits them: pod-security.kubernetes.io/enforce="baseline"`)
	label(nil)
	check("no label", 0, "the cluster's default level applies")
	c.kube.Discovery().(*fakediscovery.FakeDiscovery).FakedServerVersion = &version.Info{Major: "1", Minor: "31", GitVersion: "v1.31.0"}
	check("old cluster", 1, "MISSING pod security userns", "on by default from 1.33")
}

// TestHelperRefusesBadRequestBeforeAnyAPICall: airlock-kube connect and
// release refuse a hostile request (a path that is not clean, a trailing
// second object, a host that is a flag) with an error naming it, before
// they so much as load the cluster's configuration: no sweep, no object.
func TestHelperRefusesBadRequestBeforeAnyAPICall(t *testing.T) {
	good := kubereq.Request{Target: "kube://" + testNS + "/hands", Session: "0123456789ab", Mounts: []kubereq.Mount{{Path: "/work"}}}
	bad := func(f func(*kubereq.Request)) string {
		r := good
		r.Mounts = append([]kubereq.Mount(nil), good.Mounts...)
		f(&r)
		return r.Encode()
	}
	for _, raw := range []string{
		bad(func(r *kubereq.Request) { r.Mounts[0].Path = "/work/../run/airlock" }),
		bad(func(r *kubereq.Request) { r.Hosts = []string{"--allow-private=0.0.0.0/0"} }),
		good.Encode() + `{"target":"kube://kube-system/hands"}`,
	} {
		for _, verb := range []string{"connect", "release"} {
			var errw strings.Builder
			called := false
			code := mainWith(context.Background(), []string{verb, raw}, strings.NewReader(""), io.Discard, &errw, func(string) string { return "" },
				func() (*Clients, error) { called = true; return nil, io.EOF })
			if code != 1 || called || !strings.Contains(errw.String(), "the hands request") {
				t.Errorf("%s %s: exit %d, clients loaded %v, stderr %q", verb, raw, code, called, errw.String())
			}
		}
	}
}

// TestSweepKeepsASameNamedHostsBroker: a broker on another machine, or in
// another pid namespace (a container), that happens to share this host's
// name labels its objects with that name and a pid that does not run
// here: the sweep must not take that broker for a dead one of this host's
// and delete its live session. Only what a broker of this host and pid
// namespace left is removed by its broker's death.
func TestSweepKeepsASameNamedHostsBroker(t *testing.T) {
	c := newCluster(t, false)
	ctx := context.Background()
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	h, _ := os.Hostname()
	pid := strings.TrimPrefix(deadBroker(t), hostLabel()+"_")
	for name, broker := range map[string]string{
		"same-name":      sanitizeLabel(h, 40) + "_" + pid,
		"same-name-key":  sanitizeLabel(h, 31) + ".0badc0de_" + pid,
		"this-host-dead": hostLabel() + "_" + pid,
	} {
		m := metav1.ObjectMeta{Name: name, Namespace: testNS, Labels: map[string]string{LabelManagedBy: ManagedBy, LabelBroker: broker, LabelSession: name},
			Annotations: map[string]string{AnnotationExpiry: future}}
		if _, err := c.kube.CoreV1().Secrets(testNS).Create(ctx, &corev1.Secret{ObjectMeta: m}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	removed, err := Sweep(ctx, c.clients, testNS, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != 1 || removed[0].Name != "this-host-dead" {
		t.Fatalf("removed %v, want only this host's dead broker's Secret", removed)
	}
}

// TestHelperPodNeverReady: a pod that never gets ready (its image cannot
// be pulled) ends the helper's connection within its ready timeout, with
// an error naming the pod and what the kubelet says keeps it back, and
// the helper deletes the pod: nothing of the connection is left.
func TestHelperPodNeverReady(t *testing.T) {
	c := newCluster(t, false)
	c.stop() // no kubelet runs the pods
	created := make(chan string, 4)
	c.kube.PrependReactor("create", "pods", func(a ktesting.Action) (bool, runtime.Object, error) {
		p := a.(ktesting.CreateAction).GetObject().(*corev1.Pod)
		p.Status.Phase = corev1.PodPending
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "hands", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image"}}}}
		created <- p.Name
		return false, nil, nil
	})
	req, err := kubereq.FromGrant("kube://"+testNS+"/hands", c.grant)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	toHelper, fromBroker := io.Pipe()
	defer fromBroker.Close()
	go func() {
		done <- Connect(context.Background(), req, &ConnectOptions{Clients: c.clients, Port: c.port, ReadyTimeout: 200 * time.Millisecond}, toHelper, io.Discard)
	}()
	name := <-created
	select {
	case err = <-done:
	case <-time.After(time.Minute):
		t.Fatal("the helper still waits for a pod that never gets ready")
	}
	if err == nil || !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "ImagePullBackOff") {
		t.Fatalf("Connect: %v; want it to name pod %s and ImagePullBackOff", err, name)
	}
	if got := left(t, c, ""); len(got) != 0 {
		t.Fatalf("left behind: %v", got)
	}
}
