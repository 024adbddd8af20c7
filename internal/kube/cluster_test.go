package kube

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	ktesting "k8s.io/client-go/testing"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/kube/kubereq"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandboxtest"
	"github.com/airlockhq/airlock/internal/toolserver"
)

func TestMain(m *testing.M) { sandboxtest.Main(m) }

const testNS = "agents"

// cluster is a fake API server (client-go's fake clientset and dynamic
// client) with a fake kubelet: for each pod created it starts a real
// tool-server on loopback, serving TLS with the pod's Secret, and marks
// the pod Ready at 127.0.0.1. With sandbox set, a fake agent-sandbox
// controller does the same for SandboxClaims, with the pool's Secret.
type cluster struct {
	t       testing.TB
	kube    *fake.Clientset
	dyn     *dynamicfake.FakeDynamicClient
	clients *Clients
	port    int
	root    string
	grant   *grant.Grant
	backend sandbox.Backend

	mu    sync.Mutex
	hands map[string]*hands // by pod or claim name
	// listening counts the hands whose listener on port is open: one at
	// a time, as when each had to bind the port alone.
	listening int
	started   chan string // names of hands that became ready
	stop      context.CancelFunc
}

// hands is one fake pod's tool-server.
type hands struct {
	srv    *toolserver.Server
	hs     *http.Server
	ln     net.Listener
	cancel context.CancelFunc
}

// end stops h's tool-server and closes its listener (hs.Close misses one
// that Serve has not taken yet); c.mu is held.
func (c *cluster) end(h *hands) {
	h.cancel()
	h.hs.Close()
	h.ln.Close()
	c.listening--
}

func newCluster(t testing.TB, sandboxAPI bool) *cluster {
	t.Helper()
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("alpha\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := grant.FromFlags(root, grant.Flags{ReadWrite: []string{root}})
	if err != nil {
		t.Fatal(err)
	}
	tpl := &corev1.PodTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "hands", Namespace: testNS},
		Template:   corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "hands", Image: "registry.example/airlock-hands@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}}}},
	}
	c := &cluster{
		t: t, kube: fake.NewClientset(tpl), port: reservePort(t), root: root, grant: g,
		backend: sandboxtest.Native(t),
		hands:   map[string]*hands{}, started: make(chan string, 16),
	}
	scheme := runtime.NewScheme()
	// The warm pool's template: its image is what a claim's pod runs.
	st, err := SandboxTemplate(&Hands{Namespace: testNS, Template: "hands", Image: tpl.Template.Spec.Containers[0].Image,
		Mounts: []Mount{{Path: root, Writable: true}}, Limits: grant.DefaultLimits})
	if err != nil {
		t.Fatal(err)
	}
	c.dyn = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme,
		map[schema.GroupVersionResource]string{ClaimResource: "SandboxClaimList", TemplateResource: "SandboxTemplateList"}, st)
	// The API server gives each object it creates a UID of its own.
	uids := func(a ktesting.Action) (bool, runtime.Object, error) {
		if m, err := meta.Accessor(a.(ktesting.CreateAction).GetObject()); err == nil && m.GetUID() == "" {
			m.SetUID(types.UID("uid-" + randomID()))
		}
		return false, nil, nil
	}
	c.kube.PrependReactor("create", "*", uids)
	c.dyn.PrependReactor("create", "*", uids)
	c.clients = &Clients{Kube: c.kube, Dynamic: c.dyn}
	if sandboxAPI {
		c.kube.Discovery().(*fakediscovery.FakeDiscovery).Resources = []*metav1.APIResourceList{{
			GroupVersion: SandboxGroupVersion.String(),
			APIResources: []metav1.APIResource{{Name: "sandboxclaims", Namespaced: true, Kind: "SandboxClaim"}, {Name: "sandboxwarmpools", Namespaced: true, Kind: "SandboxWarmPool"}},
		}}
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.stop = cancel
	t.Cleanup(c.close)
	c.kubelet(ctx)
	if sandboxAPI {
		c.poolSecret()
		c.controller(ctx)
	}
	return c
}

func (c *cluster) close() {
	c.stop()
	c.stopHands()
}

// stopHands ends every tool-server, as the kubelet does for deleted pods.
func (c *cluster) stopHands() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for n, h := range c.hands {
		c.end(h)
		delete(c.hands, n)
	}
}

// serve starts a tool-server for name with the credentials in secret.
func (c *cluster) serve(name string, secret map[string][]byte) {
	c.t.Helper()
	cert, err := tls.X509KeyPair(secret[keyCert], secret[keyKey])
	if err != nil {
		c.t.Errorf("hands %s: the Secret's certificate: %v", name, err)
		return
	}
	srv, err := toolserver.NewServer(&toolserver.ServerOptions{Grant: c.grant, Backend: c.backend, Name: name, Heartbeat: 200 * time.Millisecond})
	if err != nil {
		c.t.Error(err)
		return
	}
	// The previous hands may hold the port a moment more.
	for i := 0; ; i++ {
		c.mu.Lock()
		free := c.listening == 0
		if free {
			c.listening++
		}
		c.mu.Unlock()
		if free {
			break
		}
		if i == 100 {
			c.t.Errorf("hands %s: another hands still listens on port %d", name, c.port)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	ln, err := listenPort(c.port)
	if err != nil {
		c.mu.Lock()
		c.listening--
		c.mu.Unlock()
		c.t.Errorf("hands %s: %v", name, err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	hs := &http.Server{Handler: srv.Handler(string(secret[keyToken])), BaseContext: func(net.Listener) context.Context { return ctx }}
	go hs.Serve(tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{cert}}))
	c.mu.Lock()
	c.hands[name] = &hands{srv: srv, hs: hs, ln: ln, cancel: cancel}
	c.mu.Unlock()
}

// kubelet runs pods: a created pod gets its tool-server and turns Ready.
func (c *cluster) kubelet(ctx context.Context) {
	w, err := c.kube.CoreV1().Pods(testNS).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	go func() {
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev := <-w.ResultChan():
				p, ok := ev.Object.(*corev1.Pod)
				if !ok || ev.Type != watch.Added {
					continue
				}
				go c.run(ctx, p)
			}
		}
	}()
}

func (c *cluster) run(ctx context.Context, p *corev1.Pod) {
	var secret string
	for _, v := range p.Spec.Volumes {
		if v.Secret != nil {
			secret = v.Secret.SecretName
		}
	}
	if secret == "" {
		return // not a pod of hands
	}
	s, err := c.kube.CoreV1().Secrets(testNS).Get(ctx, secret, metav1.GetOptions{})
	if err != nil {
		c.t.Errorf("pod %s: its Secret %q: %v", p.Name, secret, err)
		return
	}
	c.serve(p.Name, s.Data)
	p = p.DeepCopy()
	p.Status.Phase = corev1.PodRunning
	p.Status.PodIP = "127.0.0.1"
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if _, err := c.kube.CoreV1().Pods(testNS).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil && ctx.Err() == nil {
		c.t.Errorf("pod %s: %v", p.Name, err)
	}
	c.started <- p.Name
}

// kill ends the hands of name as a node failure would: the pod fails and
// its tool-server, with every connection, is gone.
func (c *cluster) kill(name string) {
	c.t.Helper()
	c.mu.Lock()
	h := c.hands[name]
	delete(c.hands, name)
	c.mu.Unlock()
	if h == nil {
		c.t.Fatalf("no hands %s to kill", name)
	}
	if p, err := c.kube.CoreV1().Pods(testNS).Get(context.Background(), name, metav1.GetOptions{}); err == nil {
		p.Status.Phase = corev1.PodFailed
		p.Status.Reason = "NodeLost"
		p.Status.Conditions = nil
		if _, err := c.kube.CoreV1().Pods(testNS).UpdateStatus(context.Background(), p, metav1.UpdateOptions{}); err != nil {
			c.t.Fatal(err)
		}
	}
	c.mu.Lock()
	c.end(h)
	c.mu.Unlock()
}

// poolSecret is the warm pool's Secret, made as the operator does
// (airlock-kube pool-secret).
func (c *cluster) poolSecret() {
	var out, errb strings.Builder
	code := mainWith(context.Background(), []string{"pool-secret", "kube://" + testNS + "/hands"}, nil, &out, &errb,
		func(string) string { return "" }, func() (*Clients, error) { return c.clients, nil })
	if code != 0 {
		c.t.Fatalf("airlock-kube pool-secret: exit %d: %s", code, errb.String())
	}
}

// controller binds each SandboxClaim to a warm pod: a tool-server with
// the pool's Secret, and the claim Ready with the pod's IP.
func (c *cluster) controller(ctx context.Context) {
	rc := c.dyn.Resource(ClaimResource).Namespace(testNS)
	w, err := rc.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	go func() {
		defer w.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case ev := <-w.ResultChan():
				u, ok := ev.Object.(*unstructured.Unstructured)
				if !ok || ev.Type != watch.Added {
					continue
				}
				if _, ok, _ := unstructured.NestedString(u.Object, "spec", "sandboxTemplateRef", "name"); !ok {
					continue // not a claim of hands (a sweep test's bare object)
				}
				go func() {
					s, err := c.kube.CoreV1().Secrets(testNS).Get(ctx, PoolSecret("hands"), metav1.GetOptions{})
					if err != nil {
						c.t.Error(err)
						return
					}
					c.serve(u.GetName(), s.Data)
					u = u.DeepCopy()
					_ = unstructured.SetNestedSlice(u.Object, []any{map[string]any{"type": "Ready", "status": "True"}}, "status", "conditions")
					_ = unstructured.SetNestedStringSlice(u.Object, []string{"127.0.0.1"}, "status", "sandbox", "podIPs")
					_ = unstructured.SetNestedField(u.Object, "sandbox-"+u.GetName(), "status", "sandbox", "name")
					if _, err := rc.Update(ctx, u, metav1.UpdateOptions{}); err != nil && ctx.Err() == nil {
						c.t.Error(err)
					}
					c.started <- u.GetName()
				}()
			}
		}
	}()
}

// waitStarted waits for the next hands to become ready; its name.
func (c *cluster) waitStarted() string {
	c.t.Helper()
	select {
	case n := <-c.started:
		return n
	case <-time.After(60 * time.Second):
		c.t.Fatal("timed out waiting for hands to become ready")
		return ""
	}
}

// acquire opens kube hands for one session on c.
func (c *cluster) acquire(mode Mode) *Session {
	c.t.Helper()
	s, err := c.acquireWith(mode, nil)
	if err != nil {
		c.t.Fatal(err)
	}
	return s
}

// acquireWith opens kube hands for one session on c, with edit (if not
// nil) applied to the request first.
func (c *cluster) acquireWith(mode Mode, edit func(*kubereq.Request)) (*Session, error) {
	c.t.Helper()
	r, err := kubereq.FromGrant("kube://"+testNS+"/hands", c.grant)
	if err != nil {
		c.t.Fatal(err)
	}
	if edit != nil {
		edit(&r)
	}
	h := HandsFor(r)
	h.Port = c.port
	return Acquire(context.Background(), &Options{Target: Target{Namespace: testNS, Template: "hands"}, Clients: c.clients, Hands: h, Mode: mode})
}

// remote connects a toolserver.Backend through s.
func (c *cluster) remote(s *Session) *toolserver.Backend {
	c.t.Helper()
	b, err := toolserver.New(context.Background(), &toolserver.Options{
		Endpoint: s.Endpoint(), Dial: s.Dial, Heartbeat: 200 * time.Millisecond, MaxBackoff: 200 * time.Millisecond,
	})
	if err != nil {
		c.t.Fatal(err)
	}
	return b
}
