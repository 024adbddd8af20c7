package kube

import (
	"context"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/airlockhq/airlock/internal/kube/kubereq"
	"github.com/airlockhq/airlock/internal/procid"
	"github.com/airlockhq/airlock/internal/toolserver"
)

// brokerSession is a broker's kube:// session with the helper in process:
// like toolserver's kube dialer, one session id for every connection, each
// connection a Connect over pipes (its ConnectOptions from opts, by
// connection number) whose Close waits for the Connect to end, as for a
// spawned helper, and the Backend's Close running Release.
type brokerSession struct {
	req  kubereq.Request
	key  []byte     // the broker's session key, given to every connection
	done chan error // each Connect's error
}

func newBrokerSession(t testing.TB, c *cluster, edit func(*kubereq.Request), opts func(n int) ConnectOptions) (*brokerSession, *toolserver.Options) {
	t.Helper()
	req, err := kubereq.FromGrant("kube://"+testNS+"/hands", c.grant)
	if err != nil {
		t.Fatal(err)
	}
	req.Session = kubereq.NewSession()
	if edit != nil {
		edit(&req)
	}
	if req, err = kubereq.Decode(req.Encode()); err != nil {
		t.Fatal(err)
	}
	bs := &brokerSession{req: req, key: kubereq.NewKey(), done: make(chan error, 8)}
	n := 0
	dial := func(context.Context) (toolserver.Conn, error) {
		n++
		o := opts(n)
		if o.Key == nil {
			o.Key = bs.key
		}
		toHelper, fromBroker := io.Pipe()
		toBroker, fromHelper := io.Pipe()
		exited := make(chan struct{})
		go func() {
			err := Connect(context.Background(), req, &o, toHelper, fromHelper)
			fromHelper.CloseWithError(io.EOF)
			toHelper.Close()
			close(exited)
			bs.done <- err
		}()
		return toolserver.StreamConn(toBroker, fromBroker, closerFunc(func() error {
			fromBroker.Close()
			toBroker.Close()
			<-exited
			return nil
		})), nil
	}
	release := func(ctx context.Context) error {
		o := opts(0)
		return Release(ctx, req, &o)
	}
	return bs, &toolserver.Options{
		Endpoint: req.Target, Dial: dial, Release: release,
		Heartbeat: 200 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
	}
}

// connectionCalls are the broker's API calls among the fake cluster's
// actions [from, to): not the kubelet's reading a new pod's Secret or
// setting its status, not the sweep's lists, and with kill not the first
// (the test's kill reading the pod).
func connectionCalls(c *cluster, from, to int, kill bool) []string {
	var calls []string
	created := false
	for i, a := range c.kube.Actions()[from:to] {
		call := a.GetVerb() + " " + a.GetResource().Resource
		switch {
		case kill && i == 0 && call == "get pods", a.GetSubresource() == "status", a.GetVerb() == "list",
			created && call == "get secrets":
			continue
		}
		created = created || call == "create pods"
		calls = append(calls, call)
	}
	return calls
}

func patchErr[T any](_ T, err error) error { return err }

// uids are the UIDs of the session's Secret, NetworkPolicy and claim.
func uids(t *testing.T, c *cluster, name string) [3]string {
	t.Helper()
	ctx := context.Background()
	sec, err := c.kube.CoreV1().Secrets(testNS).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the session's Secret: %v", err)
	}
	np, err := c.kube.NetworkingV1().NetworkPolicies(testNS).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the session's NetworkPolicy: %v", err)
	}
	pvc, err := c.kube.CoreV1().PersistentVolumeClaims(testNS).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the session's workspace claim: %v", err)
	}
	return [3]string{string(sec.UID), string(np.UID), string(pvc.UID)}
}

func expiry(t *testing.T, c *cluster, name string) time.Time {
	t.Helper()
	sec, err := c.kube.CoreV1().Secrets(testNS).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e, err := time.Parse(time.RFC3339, sec.Annotations[AnnotationExpiry])
	if err != nil {
		t.Fatalf("the Secret's expiry: %v", err)
	}
	return e
}

// TestWorkspaceOutlivesAConnection: through the helper, with the broker's
// session id: a pod killed after the connection is up ends that
// connection; the broker reconnects and the new helper's pod mounts the
// SAME workspace claim and Secret (same names and UIDs), with their expiry
// moved on, and makes nothing but a new pod; only the broker's Close
// (Release) deletes the Secret, the policy and the claim.
func TestWorkspaceOutlivesAConnection(t *testing.T) {
	c := newCluster(t, false)
	bs, o := newBrokerSession(t, c, func(r *kubereq.Request) { r.WorkspaceSize = "5Gi" }, func(int) ConnectOptions {
		return ConnectOptions{Clients: c.clients, Port: c.port, Broker: BrokerID()}
	})
	kStart := len(c.kube.Actions())
	b, err := toolserver.New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			b.Close()
		}
	}()
	name := "airlock-" + bs.req.Session
	first := c.waitStarted()
	readA(t, c, b)
	if d := cmp.Diff([]string{
		"get resource", "get podtemplates", "get secrets", "create secrets", "create persistentvolumeclaims",
		"create networkpolicies", "create pods", "watch pods", "get pods",
	}, connectionCalls(c, kStart, len(c.kube.Actions()), false)); d != "" {
		t.Errorf("the API calls of the first connection (-want +got):\n%s", d)
	}
	ctx := context.Background()
	before := uids(t, c, name)
	p, err := c.kube.CoreV1().Pods(testNS).Get(ctx, first, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := workspaceClaim(t, p, c.root); got != name {
		t.Fatalf("pod %s mounts claim %q, want %q", first, got, name)
	}

	if d := p.Spec.ActiveDeadlineSeconds; d == nil || time.Duration(*d)*time.Second >= time.Until(expiry(t, c, name)) {
		t.Errorf("pod %s ends at %v s, not before its session's objects expire (%v)", first, d, expiry(t, c, name))
	}
	// The session's expiry has passed when its pod dies (the kubelet ends
	// it at its deadline): the reconnect's sweep must keep the broker's own
	// session, and the reuse move the expiry on.
	past := expiryPatch(time.Now().Add(-time.Minute))
	for _, err := range []error{
		patchErr(c.kube.CoreV1().Secrets(testNS).Patch(ctx, name, types.MergePatchType, past, metav1.PatchOptions{})),
		patchErr(c.kube.CoreV1().PersistentVolumeClaims(testNS).Patch(ctx, name, types.MergePatchType, past, metav1.PatchOptions{})),
		patchErr(c.kube.NetworkingV1().NetworkPolicies(testNS).Patch(ctx, name, types.MergePatchType, past, metav1.PatchOptions{})),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	// A pod an earlier connection left (its helper killed) holds the
	// ReadWriteOnce claim: the reuse deletes it.
	leftover := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "airlock-" + bs.req.Session + "-dead-1", Namespace: testNS, Labels: p.Labels}}
	if _, err := c.kube.CoreV1().Pods(testNS).Create(ctx, leftover, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	k0 := len(c.kube.Actions())
	c.kill(first)
	if err := <-bs.done; err == nil {
		t.Fatal("the connection to the killed pod ended without an error")
	}
	second := c.waitStarted()
	readA(t, c, b)
	k1 := len(c.kube.Actions())
	if second == first {
		t.Fatalf("the killed pod %s was not replaced", first)
	}
	if after := uids(t, c, name); after != before {
		t.Fatalf("the Secret, policy and claim after the reconnect have UIDs %v, before %v: not the same objects", after, before)
	}
	p, err = c.kube.CoreV1().Pods(testNS).Get(ctx, second, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := workspaceClaim(t, p, c.root); got != name {
		t.Fatalf("the reconnect's pod %s mounts claim %q, want the session's %q", second, got, name)
	}
	for _, v := range p.Spec.Volumes {
		if v.Secret != nil && v.Secret.SecretName != name {
			t.Fatalf("the reconnect's pod mounts Secret %q, want the session's %q", v.Secret.SecretName, name)
		}
	}
	if exp := expiry(t, c, name); !exp.After(time.Now()) {
		t.Errorf("the reused Secret's expiry %v did not move on", exp)
	}
	calls := connectionCalls(c, k0, k1, true)
	want := []string{
		"delete pods",  // the first connection's end
		"get resource", // discovery: does the sweep list SandboxClaims too
		"get podtemplates", "get secrets",
		"delete pods", // the leftover (after listing the session's pods)
		"patch secrets", "get persistentvolumeclaims", "patch persistentvolumeclaims",
		"patch networkpolicies", "create pods", "watch pods", "get pods",
	}
	if d := cmp.Diff(want, calls); d != "" {
		t.Errorf("the API calls of a lost connection and its reconnect (-want +got):\n%s", d)
	}
	want2 := map[string][]string{"Pod": {second}, "Secret": {name}, "NetworkPolicy": {name}, "PersistentVolumeClaim": {name}}
	if d := cmp.Diff(want2, left(t, c, bs.req.Session)); d != "" {
		t.Fatalf("during the reconnected session (-want +got):\n%s", d)
	}

	k2 := len(c.kube.Actions())
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	closed = true
	if err := <-bs.done; err != nil {
		t.Fatalf("the connection ended with %v after the broker closed it", err)
	}
	calls = brokerActions(c.kube.Actions()[k2:])
	want = []string{
		"delete pods",  // the connection's end
		"get resource", // discovery: are there SandboxClaims to list
		"list pods", "list persistentvolumeclaims", "delete persistentvolumeclaims",
		"list networkpolicies", "delete networkpolicies", "list secrets", "delete secrets",
	}
	if d := cmp.Diff(want, calls); d != "" {
		t.Errorf("the API calls of the session's end (-want +got):\n%s", d)
	}
	if got := left(t, c, ""); len(got) != 0 {
		t.Fatalf("the broker's Close left %v", got)
	}
}

// TestCrashedBrokersSessionIsSwept: a broker that dies without ending its
// session leaves the Secret, policy and claim (its helper deletes only its
// pod); while that broker lives the sweep keeps them, once it is gone the
// sweep removes them.
func TestCrashedBrokersSessionIsSwept(t *testing.T) {
	c := newCluster(t, false)
	cmd := exec.Command("sleep", "600") // the broker's process, killed below
	if err := cmd.Start(); err != nil {
		t.Skipf("no sleep: %v", err)
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	id := procid.Of(cmd.Process.Pid)
	if id == "" {
		t.Skip("cannot name a process here")
	}
	broker := BrokerID()
	broker = broker[:strings.Index(broker, "_")+1] + string(id)
	bs, o := newBrokerSession(t, c, func(r *kubereq.Request) { r.WorkspaceSize = "1Gi" }, func(int) ConnectOptions {
		return ConnectOptions{Clients: c.clients, Port: c.port, Broker: broker}
	})
	o.Release = nil // a crash: the session never ends
	b, err := toolserver.New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	c.waitStarted()
	readA(t, c, b)
	b.Close() // the broker's end of the pipes closes, as when it dies
	if err := <-bs.done; err != nil {
		t.Fatal(err)
	}
	name := "airlock-" + bs.req.Session
	kept := map[string][]string{"Secret": {name}, "NetworkPolicy": {name}, "PersistentVolumeClaim": {name}}
	if d := cmp.Diff(kept, left(t, c, bs.req.Session)); d != "" {
		t.Fatalf("after the connection ended without the session's end (-want +got):\n%s", d)
	}
	ctx := context.Background()
	if gone, err := Sweep(ctx, c.clients, testNS, false); err != nil || len(gone) != 0 {
		t.Fatalf("the sweep removed %v (%v) of a live broker", gone, err)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	gone, err := Sweep(ctx, c.clients, testNS, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(gone) != 3 {
		t.Errorf("the sweep removed %v, want the Secret, policy and claim of the dead broker", gone)
	}
	if got := left(t, c, ""); len(got) != 0 {
		t.Fatalf("left after the sweep: %v", got)
	}
}

// TestSessionRefusesAnotherBrokersSecret: a Secret of the session's name
// that carries another broker's (or session's) labels is not taken up:
// Acquire fails naming it, and leaves it alone.
func TestSessionRefusesAnotherBrokersSecret(t *testing.T) {
	c := newCluster(t, false)
	ctx := context.Background()
	id := kubereq.NewSession()
	name := "airlock-" + id
	foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, Labels: map[string]string{
		LabelManagedBy: ManagedBy, LabelSession: id, LabelBroker: "elsewhere_1-2", LabelTemplate: "hands",
	}}, Data: map[string][]byte{keyToken: []byte("0123456789abcdef0123"), keyCert: []byte("x")}}
	if _, err := c.kube.CoreV1().Secrets(testNS).Create(ctx, foreign, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r, err := kubereq.FromGrant("kube://"+testNS+"/hands", c.grant)
	if err != nil {
		t.Fatal(err)
	}
	h := HandsFor(r)
	_, err = Acquire(ctx, &Options{Target: Target{Namespace: testNS, Template: "hands"}, Clients: c.clients, Hands: h, Mode: ModePods, Session: id, Key: kubereq.NewKey()})
	if err == nil || !strings.Contains(err.Error(), "Secret "+testNS+"/"+name+" exists but is not this session's") {
		t.Fatalf("Acquire with another broker's Secret: %v, want it refused naming the Secret", err)
	}
	want := map[string][]string{"Secret": {name}}
	if d := cmp.Diff(want, left(t, c, id)); d != "" {
		t.Fatalf("after the refusal (-want +got):\n%s", d)
	}
	gone, err := ReleaseSession(ctx, c.clients, Target{Namespace: testNS, Template: "hands"}, id, BrokerID(), false)
	if err != nil || len(gone) != 0 {
		t.Fatalf("this broker's release removed %v (%v) of another broker's", gone, err)
	}
}

// TestReconnectRefusesAReplacedSecret: between two connections of a
// broker's session, another party deletes the session's Secret and puts
// its own in its place, with the session's labels (this broker, this
// session, this template) and its own token and certificate. The
// reconnect must not take it up: it fails naming the Secret, makes no pod
// that mounts it, and dials nothing.
func TestReconnectRefusesAReplacedSecret(t *testing.T) {
	c := newCluster(t, false)
	bs, o := newBrokerSession(t, c, nil, func(int) ConnectOptions {
		return ConnectOptions{Clients: c.clients, Port: c.port, Broker: BrokerID()}
	})
	b, err := toolserver.New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	first := c.waitStarted()
	readA(t, c, b)
	ctx := context.Background()
	name := "airlock-" + bs.req.Session
	secrets := c.kube.CoreV1().Secrets(testNS)
	orig, err := secrets.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	evil, err := newCredentials(time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if err := secrets.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	forged := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, Labels: orig.Labels, Annotations: orig.Annotations},
		Data: map[string][]byte{keyToken: []byte(evil.token), keyCert: evil.certPEM, keyKey: evil.keyPEM}}
	if _, err := secrets.Create(ctx, forged, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	k0 := len(c.kube.Actions())
	c.kill(first)
	if err := <-bs.done; err == nil {
		t.Fatal("the connection to the killed pod ended without an error")
	}
	select { // the reconnect's end, or a pod it made running
	case err = <-bs.done:
	case p := <-c.started:
		t.Fatalf("the reconnect made pod %s, mounting the replaced Secret", p)
	}
	if err == nil || !strings.Contains(err.Error(), "Secret "+testNS+"/"+name) || !strings.Contains(err.Error(), "did not make") {
		t.Fatalf("the reconnect after the Secret was replaced: %v; want it refused naming the Secret", err)
	}
	for _, a := range c.kube.Actions()[k0:] {
		if a.GetVerb() == "create" && a.GetResource().Resource == "pods" {
			t.Fatalf("the reconnect made a pod mounting the replaced Secret: %v", a)
		}
	}
	for _, s := range []string{evil.token, string(evil.keyPEM)} {
		if strings.Contains(err.Error(), s) {
			t.Fatal("the refusal holds the Secret's contents")
		}
	}
}
