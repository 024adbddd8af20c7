package kube

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/kube/kubereq"

	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/toolserver"
)

// readA runs a real read_file through the broker over b.
func readA(t *testing.T, c *cluster, b *toolserver.Backend) {
	t.Helper()
	s, err := broker.Open(&broker.Options{Grant: c.grant, Backend: b, RecordsDir: t.TempDir(), Pool: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	res, err := s.Call(ctx, "read_file", json.RawMessage(`{"path":"a.txt"}`))
	if err != nil || res.Class != broker.ClassOK || !strings.Contains(res.Output.Content, "alpha") {
		t.Fatalf("read_file: %v %+v", err, res)
	}
}

// left lists the session's objects still in the cluster, by kind.
func left(t *testing.T, c *cluster, session string) map[string][]string {
	t.Helper()
	ctx := context.Background()
	sel := metav1.ListOptions{LabelSelector: LabelSession + "=" + session}
	if session == "" {
		sel.LabelSelector = LabelManagedBy + "=" + ManagedBy
	}
	out := map[string][]string{}
	pods, err := c.kube.CoreV1().Pods(testNS).List(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		out["Pod"] = append(out["Pod"], p.Name)
	}
	secs, _ := c.kube.CoreV1().Secrets(testNS).List(ctx, sel)
	for _, s := range secs.Items {
		out["Secret"] = append(out["Secret"], s.Name)
	}
	nps, _ := c.kube.NetworkingV1().NetworkPolicies(testNS).List(ctx, sel)
	for _, n := range nps.Items {
		out["NetworkPolicy"] = append(out["NetworkPolicy"], n.Name)
	}
	pvcs, _ := c.kube.CoreV1().PersistentVolumeClaims(testNS).List(ctx, sel)
	for _, p := range pvcs.Items {
		out["PersistentVolumeClaim"] = append(out["PersistentVolumeClaim"], p.Name)
	}
	cls, _ := c.dyn.Resource(ClaimResource).Namespace(testNS).List(ctx, sel)
	for _, u := range cls.Items {
		out["SandboxClaim"] = append(out["SandboxClaim"], u.GetName())
	}
	return out
}

// TestPodLifecycle: plain Pods. Acquire creates the Secret, policy and
// pod; the first call waits for the pod to be Ready and runs on it; a pod
// that dies is replaced and the session reconnects to the new one;
// Release deletes everything.
func TestPodLifecycle(t *testing.T) {
	c := newCluster(t, false)
	s := c.acquire(ModeAuto)
	if s.Mode() != ModePods {
		t.Fatalf("mode %q without the agent-sandbox API, want pods", s.Mode())
	}
	id := s.ID()
	want := map[string][]string{
		"Pod":           {"airlock-" + id + "-1"},
		"Secret":        {"airlock-" + id},
		"NetworkPolicy": {"airlock-" + id},
	}
	if d := cmp.Diff(want, left(t, c, id)); d != "" {
		t.Fatalf("after Acquire (-want +got):\n%s", d)
	}
	b := c.remote(s)
	first := c.waitStarted()
	readA(t, c, b)

	c.kill(first)
	second := c.waitStarted()
	if second == first {
		t.Fatalf("the dead pod %s was not replaced", first)
	}
	readA(t, c, b) // waits for the reconnect, within the call's context
	want["Pod"] = []string{second}
	if d := cmp.Diff(want, left(t, c, id)); d != "" {
		t.Fatalf("after the pod died (-want +got):\n%s", d)
	}

	b.Close()
	if err := s.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := left(t, c, id); len(got) != 0 {
		t.Fatalf("Release left %v", got)
	}
	if _, err := s.Dial(context.Background()); !errors.Is(err, ErrReleased) {
		t.Fatalf("Dial after Release: %v, want ErrReleased", err)
	}
}

// TestSandboxLifecycle: with the agent-sandbox API served, the session
// claims a warm pod with a SandboxClaim, runs its call there, claims again
// when the claimed sandbox is gone, and deletes its claim on Release.
func TestSandboxLifecycle(t *testing.T) {
	c := newCluster(t, true)
	s := c.acquire(ModeAuto)
	if s.Mode() != ModeSandbox {
		t.Fatalf("mode %q with the agent-sandbox API, want sandbox", s.Mode())
	}
	id := s.ID()
	if d := cmp.Diff(map[string][]string{"SandboxClaim": {"airlock-" + id + "-1"}}, left(t, c, id)); d != "" {
		t.Fatalf("after Acquire (-want +got):\n%s", d)
	}
	b := c.remote(s)
	first := c.waitStarted()
	readA(t, c, b)

	// The claim's sandbox is lost: the controller marks it, the hands die.
	ctx := context.Background()
	rc := c.dyn.Resource(ClaimResource).Namespace(testNS)
	u, err := rc.Get(ctx, first, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	u.Object["status"] = map[string]any{"conditions": []any{map[string]any{"type": "Expired", "status": "True"}}}
	if _, err := rc.Update(ctx, u, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.kill(first)
	second := c.waitStarted()
	readA(t, c, b)
	if d := cmp.Diff(map[string][]string{"SandboxClaim": {second}}, left(t, c, id)); d != "" {
		t.Fatalf("after the sandbox was lost (-want +got):\n%s", d)
	}
	b.Close()
	if err := s.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if got := left(t, c, id); len(got) != 0 {
		t.Fatalf("Release left %v", got)
	}
}

// TestReleaseEndsAWaitingDial: a Dial waiting for a pod that never gets
// ready ends when the session is released, and nothing is left.
func TestReleaseEndsAWaitingDial(t *testing.T) {
	c := newCluster(t, false)
	c.stop() // no kubelet: the pod never gets ready
	s := c.acquire(ModePods)
	done := make(chan error, 1)
	go func() {
		_, err := s.Dial(context.Background())
		done <- err
	}()
	// Release waits for the Dial to let go of the session.
	if err := s.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Dial succeeded without a ready pod")
		}
	case <-time.After(time.Minute):
		t.Fatal("Dial still waits after Release")
	}
	if got := left(t, c, s.ID()); len(got) != 0 {
		t.Fatalf("Release left %v", got)
	}
}

// workspaceClaim is the claim the pod's first granted path is mounted
// from ("" for none), and whether that mount is writable.
func workspaceClaim(t *testing.T, p *corev1.Pod, path string) string {
	t.Helper()
	var vol string
	for _, m := range p.Spec.Containers[0].VolumeMounts {
		if m.MountPath == path {
			if m.ReadOnly {
				t.Errorf("pod %s mounts the workspace %s read-only", p.Name, path)
			}
			vol = m.Name
		}
	}
	for _, v := range p.Spec.Volumes {
		if v.Name == vol && v.PersistentVolumeClaim != nil {
			return v.PersistentVolumeClaim.ClaimName
		}
	}
	return ""
}

// TestPodWorkspaceClaim: with a workspace size, the session makes one
// PersistentVolumeClaim (the size and class asked, ReadWriteOnce, the
// session's labels and expiry, owned by its Secret); its pod mounts it at
// the first granted path; the pod that replaces a dead one mounts the
// same claim; Release deletes it.
func TestPodWorkspaceClaim(t *testing.T) {
	c := newCluster(t, false)
	s, err := c.acquireWith(ModePods, func(r *kubereq.Request) { r.WorkspaceSize, r.WorkspaceClass = "10Gi", "fast-ssd" })
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	id := s.ID()
	name := "airlock-" + id
	pvc, err := c.kube.CoreV1().PersistentVolumeClaims(testNS).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the session's workspace claim: %v", err)
	}
	sec, err := c.kube.CoreV1().Secrets(testNS).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	size := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	switch {
	case size.Cmp(resource.MustParse("10Gi")) != 0:
		t.Errorf("claim size %v, want 10Gi", size.String())
	case pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName != "fast-ssd":
		t.Errorf("claim class %v, want fast-ssd", pvc.Spec.StorageClassName)
	case len(pvc.Spec.AccessModes) != 1 || pvc.Spec.AccessModes[0] != corev1.ReadWriteOnce:
		t.Errorf("claim access modes %v, want ReadWriteOnce", pvc.Spec.AccessModes)
	case len(pvc.OwnerReferences) != 1 || pvc.OwnerReferences[0].UID != sec.UID || pvc.OwnerReferences[0].Kind != "Secret":
		t.Errorf("claim owners %+v, want the session's Secret", pvc.OwnerReferences)
	case pvc.Labels[LabelSession] != id || pvc.Labels[LabelManagedBy] != ManagedBy || pvc.Annotations[AnnotationExpiry] == "":
		t.Errorf("claim labels %v, annotations %v: not the session's", pvc.Labels, pvc.Annotations)
	}

	b := c.remote(s)
	first := c.waitStarted()
	readA(t, c, b)
	p, err := c.kube.CoreV1().Pods(testNS).Get(ctx, first, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := workspaceClaim(t, p, c.root); got != name {
		t.Fatalf("pod %s mounts claim %q at %s, want %q", first, got, c.root, name)
	}

	c.kill(first)
	second := c.waitStarted()
	readA(t, c, b)
	p, err = c.kube.CoreV1().Pods(testNS).Get(ctx, second, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := workspaceClaim(t, p, c.root); got != name {
		t.Fatalf("the replacement pod %s mounts claim %q, want the session's %q", second, got, name)
	}
	again, err := c.kube.CoreV1().PersistentVolumeClaims(testNS).Get(ctx, name, metav1.GetOptions{})
	if err != nil || again.UID != pvc.UID {
		t.Fatalf("the workspace claim did not survive the pod: %v", err)
	}
	want := map[string][]string{"Pod": {second}, "Secret": {name}, "NetworkPolicy": {name}, "PersistentVolumeClaim": {name}}
	if d := cmp.Diff(want, left(t, c, id)); d != "" {
		t.Fatalf("after the pod died (-want +got):\n%s", d)
	}

	b.Close()
	if err := s.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if got := left(t, c, id); len(got) != 0 {
		t.Fatalf("Release left %v", got)
	}
}

// TestWorkspaceClaimModes: a workspace claim needs plain Pods. Asked of
// agent-sandbox explicitly it is refused, naming the grant's key; in the
// automatic mode it picks plain Pods even where warm pools are served;
// a size that is not a quantity is refused before anything is made.
func TestWorkspaceClaimModes(t *testing.T) {
	c := newCluster(t, true)
	ws := func(r *kubereq.Request) { r.WorkspaceSize = "1Gi" }
	if _, err := c.acquireWith(ModeSandbox, ws); err == nil || !strings.Contains(err.Error(), "remote.workspace_size") {
		t.Fatalf("a workspace claim with agent-sandbox: %v, want an error naming remote.workspace_size", err)
	}
	s, err := c.acquireWith(ModeAuto, ws)
	if err != nil {
		t.Fatal(err)
	}
	if s.Mode() != ModePods {
		t.Errorf("mode %q for a workspace claim, want pods", s.Mode())
	}
	c.waitStarted() // the fake kubelet has read the Secret
	if err := s.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.acquireWith(ModePods, func(r *kubereq.Request) { r.WorkspaceSize = "ten gigs" }); err == nil || !strings.Contains(err.Error(), `"ten gigs"`) {
		t.Fatalf("a bad size: %v, want an error naming it", err)
	}
	if got := left(t, c, ""); len(got) != 0 {
		t.Fatalf("left behind: %v", got)
	}
}

// TestUsernsModes: the userns pod security needs plain Pods (a warm pod's
// spec is its template's): asked of agent-sandbox explicitly it is
// refused, naming the grant's key; in the automatic mode it picks plain
// Pods even where warm pools are served, and the pod is user-namespaced.
func TestUsernsModes(t *testing.T) {
	c := newCluster(t, true)
	userns := func(r *kubereq.Request) { r.PodSecurity = grant.PodSecurityUserns }
	if _, err := c.acquireWith(ModeSandbox, userns); err == nil || !strings.Contains(err.Error(), "remote.pod_security") {
		t.Fatalf("userns pods with agent-sandbox: %v, want an error naming remote.pod_security", err)
	}
	s, err := c.acquireWith(ModeAuto, userns)
	if err != nil {
		t.Fatal(err)
	}
	if s.Mode() != ModePods {
		t.Errorf("mode %q for userns pods, want pods", s.Mode())
	}
	c.waitStarted()
	pods, err := c.kube.CoreV1().Pods(testNS).List(context.Background(), metav1.ListOptions{})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("pods %v: %v", pods, err)
	}
	if hu := pods.Items[0].Spec.HostUsers; hu == nil || *hu {
		t.Errorf("the session's pod has hostUsers %v, want false", hu)
	}
	if err := s.Release(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// TestWorkspaceFromGrant: the grant's workspace_size and workspace_class
// reach the hands through the helper's request.
func TestWorkspaceFromGrant(t *testing.T) {
	dir := t.TempDir()
	g, err := grant.Parse([]byte(`[paths]
read_write = ["."]

[remote]
endpoint = "kube://agents/hands"
workspace_size = "10Gi"
workspace_class = "standard"
`), "g.toml", dir)
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
	if h.WorkspaceSize != "10Gi" || h.WorkspaceClass != "standard" {
		t.Fatalf("hands' workspace %q in %q, want 10Gi in standard", h.WorkspaceSize, h.WorkspaceClass)
	}
}

// TestDialRefusesAReplacedPod: another party in the namespace deletes the
// session's pod and creates its own of the same name (a pod it runs, with
// the session's Secret mounted, Ready at an address it serves): the
// session dials only the pod it made (its UID), and refuses, naming the
// pod, rather than hand the agent's calls to the impostor.
func TestDialRefusesAReplacedPod(t *testing.T) {
	c := newCluster(t, false)
	s := c.acquire(ModePods)
	defer s.Release(context.Background())
	name := c.waitStarted()
	ctx := context.Background()
	pods := c.kube.CoreV1().Pods(testNS)
	orig, err := pods.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.stopHands()
	if err := pods.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	evil := orig.DeepCopy()
	evil.ObjectMeta = metav1.ObjectMeta{Name: name, Namespace: testNS, Labels: orig.Labels, Annotations: orig.Annotations, OwnerReferences: orig.OwnerReferences}
	evil.Status = corev1.PodStatus{}
	if _, err := pods.Create(ctx, evil, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitStarted()
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := s.Dial(dctx)
	if err == nil {
		conn.Close()
		t.Fatal("the session dialled a pod of its name that it did not make")
	}
	if !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "not the pod") {
		t.Fatalf("Dial: %v; want it to name the pod %s as not the session's", err, name)
	}
}

// TestDialRefusesAChangedPod: another party changes the image of the
// session's pod (a pod's one mutable container field) or adds an
// ephemeral container to it, or removes a label the session's
// NetworkPolicy selects it by, before the session dials: the session
// refuses it, naming what changed.
func TestDialRefusesAChangedPod(t *testing.T) {
	for _, tc := range []struct {
		name, want string
		edit       func(*corev1.Pod)
	}{
		{"image", "container hands", func(p *corev1.Pod) { p.Spec.Containers[0].Image = "registry.example/evil:latest" }},
		{"label", "label " + LabelSession, func(p *corev1.Pod) { delete(p.Labels, LabelSession) }},
		{"ephemeral", "containers", func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, false)
			s := c.acquire(ModePods)
			defer s.Release(context.Background())
			name := c.waitStarted()
			ctx := context.Background()
			pods := c.kube.CoreV1().Pods(testNS)
			p, err := pods.Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			tc.edit(p)
			if _, err := pods.Update(ctx, p, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			defer cancel()
			conn, err := s.Dial(dctx)
			if err == nil {
				conn.Close()
				t.Fatal("the session dialled its pod after another party changed it")
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "not the pod") {
				t.Fatalf("Dial: %v; want it to say the pod's %s changed", err, tc.want)
			}
		})
	}
}

// TestDialRefusesAReplacedClaim: as TestDialRefusesAReplacedPod, for a
// SandboxClaim: a claim of the session's name that the session did not
// make (whatever address its status names) is not dialled.
func TestDialRefusesAReplacedClaim(t *testing.T) {
	c := newCluster(t, true)
	s := c.acquire(ModeSandbox)
	defer s.Release(context.Background())
	name := c.waitStarted()
	ctx := context.Background()
	rc := c.dyn.Resource(ClaimResource).Namespace(testNS)
	orig, err := rc.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c.stopHands()
	if err := rc.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	evil := orig.DeepCopy()
	evil.SetUID("")
	evil.SetResourceVersion("")
	delete(evil.Object, "status")
	if _, err := rc.Create(ctx, evil, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitStarted()
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	conn, err := s.Dial(dctx)
	if err == nil {
		conn.Close()
		t.Fatal("the session dialled a SandboxClaim of its name that it did not make")
	}
	if !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "not the claim") {
		t.Fatalf("Dial: %v; want it to name the claim %s as not the session's", err, name)
	}
}
