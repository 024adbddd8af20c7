package kube

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/kube/kubereq"
	"github.com/airlockhq/airlock/internal/procid"
	"github.com/airlockhq/airlock/internal/toolserver"
)

// Clients are the API clients a session uses.
type Clients struct {
	Kube    kubernetes.Interface
	Dynamic dynamic.Interface
}

// LoadClients builds the clients from the standard loading rules:
// $KUBECONFIG, ~/.kube/config, or the in-cluster service account.
func LoadClients() (*Clients, error) {
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		clientcmd.NewDefaultClientConfigLoadingRules(), &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("loading the cluster's configuration ($KUBECONFIG, ~/.kube/config or in-cluster): %w", err)
	}
	cfg.UserAgent = "airlock"
	k, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("the cluster's client: %w", err)
	}
	d, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("the cluster's dynamic client: %w", err)
	}
	return &Clients{Kube: k, Dynamic: d}, nil
}

// Mode is how a session gets its hands.
type Mode string

// The modes: ModeAuto picks ModeSandbox when the cluster serves the
// agent-sandbox SandboxClaim API, else ModePods.
const (
	ModeAuto    Mode = ""
	ModePods    Mode = "pods"
	ModeSandbox Mode = "sandbox"
)

// DefaultTTL is how long a session's objects live when their broker never
// releases them.
const DefaultTTL = 12 * time.Hour

// Options configure Acquire. Acquire copies them.
type Options struct {
	Target  Target
	Clients *Clients
	// Hands holds the grant's part (HandsFor: paths, hosts, limits,
	// RuntimeClass, WorkspaceSize and WorkspaceClass) and the optional
	// Workspace (an existing claim) and BrokerCIDRs; the rest is filled in.
	Hands Hands
	// TTL bounds the session's objects (default DefaultTTL).
	TTL time.Duration
	// Session, when set, is the broker's session id (kubereq.Request.Session):
	// the session's Secret, NetworkPolicy and workspace claim are named from
	// it and outlive the connection. Acquire reuses them when they exist
	// (and carry this broker's labels), refreshing their expiry, and makes
	// only a new pod; Disconnect keeps them; ReleaseSession deletes them.
	// Empty: a random id, and the session is this Session alone.
	Session string
	// Key is the broker's session key (kubereq.NewKey), needed with
	// Session: the session's token and certificate key are derived from
	// it, and a later connection takes up the session's Secret only if it
	// holds them, so a Secret another party put in its place is refused.
	Key  []byte
	Mode Mode
	// Broker names this broker in labels (default BrokerID()).
	Broker string
	// Logger receives operational logs; nil discards.
	Logger *slog.Logger
}

// BrokerID names this process for the airlock.dev/broker label: the host
// (hostLabel) and the process's pid and start time, "HOST.KEY_PID-START".
func BrokerID() string {
	return hostLabel() + "_" + string(procid.Self())
}

// hostLabel names this host and pid namespace in a broker id: the host
// name (at most 31 characters) and, where the system tells them, a key of
// its boot and pid namespace (hostKey), "HOST.KEY". The sweep takes a
// broker of this hostLabel whose process is gone for dead; the key keeps
// it from so taking a live broker of another machine, or container, that
// shares the host name, whose pid does not run here.
func hostLabel() string {
	h, _ := os.Hostname()
	h = sanitizeLabel(h, 31)
	if k := hostKeyOf(); k != "" {
		h += "." + k
	}
	return h
}

// hostKeyOf is hostKey (tests name a system without one).
var hostKeyOf = hostKey

// ParentBrokerID is BrokerID of this process's parent: for the
// airlock-kube helper, the broker that spawned it, whose session its
// objects belong to (BrokerID when the parent cannot be named).
func ParentBrokerID() string {
	id := procid.Of(os.Getppid())
	if id == "" {
		return BrokerID()
	}
	return hostLabel() + "_" + string(id)
}

func sanitizeLabel(s string, n int) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	out := strings.Trim(b.String(), "-.")
	if len(out) > n {
		out = strings.Trim(out[:n], "-.")
	}
	if out == "" {
		out = "host"
	}
	return out
}

// Session is one broker session's hands in the cluster. Dial is its
// toolserver.Options.Dial: each call returns a connection to the current
// pod, replacing a pod that died. Release deletes what the session made.
type Session struct {
	o   Options
	c   *Clients
	log *slog.Logger
	id  string
	// shared says the id is the broker's (Options.Session): the Secret,
	// policy and workspace claim outlive this connection.
	shared bool
	// prefix names the pods and SandboxClaims: "airlock-ID", and for a
	// shared session a connection id after it ("airlock-ID-CONN"), so a
	// connection's pods never collide with an earlier connection's.
	prefix string
	mode   Mode
	hands  Hands // the template applied; Name set per pod
	creds  *credentials
	secret *corev1.Secret // the session's Secret (plain Pods)
	// workspace is the PersistentVolumeClaim the session made (plain
	// Pods with WorkspaceSize): every pod of the session mounts it.
	workspace string
	// workspaceUID and policyUID are the UIDs of the workspace claim and
	// the NetworkPolicy the session made or took up: Release deletes
	// only them, not objects another party made since under their names.
	workspaceUID, policyUID types.UID

	// released is cancelled by Release, ending a Dial that waits.
	released context.Context
	release  context.CancelFunc

	mu  sync.Mutex
	pod string // the current pod (plain Pods)
	// podUID is the UID the API server gave the current pod when this
	// session created it: Dial trusts no other pod of that name.
	podUID types.UID
	// podSpec is the current pod's spec as created: a pod whose
	// containers another party changed since (its image) is not dialled.
	podSpec *corev1.PodSpec
	pods    int    // pods made
	claim   string // the SandboxClaim (agent-sandbox)
	// claimUID is the UID the API server gave the claim this session
	// created: Dial trusts no other claim of that name.
	claimUID types.UID
	closed   bool
}

// ErrReleased is returned by Dial after Release.
var ErrReleased = errors.New("kube: the session's hands were released")

// Acquire obtains hands for one session: in ModePods it creates the
// session's Secret (a random token and TLS key), NetworkPolicy and Pod; in
// ModeSandbox a SandboxClaim against the template's warm pool. It does not
// wait for the pod: the first Dial does.
func Acquire(ctx context.Context, opts *Options) (*Session, error) {
	o := *opts
	if o.Clients == nil {
		return nil, errors.New("kube: Options need Clients")
	}
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.Broker == "" {
		o.Broker = BrokerID()
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Session{o: o, c: o.Clients, log: logger, id: o.Session, shared: o.Session != ""}
	if s.shared {
		if !sessionID.MatchString(s.id) {
			return nil, fmt.Errorf("%s: session id %q is not 12 lower-case hex digits", o.Target, s.id)
		}
		if len(o.Key) != kubereq.KeyLen {
			return nil, fmt.Errorf("%s: session %s: a broker's session needs its %d-byte session key (Options.Key; the helper reads it on stdin)", o.Target, s.id, kubereq.KeyLen)
		}
		s.prefix = "airlock-" + s.id + "-" + randomID()[:4]
	} else {
		s.id = randomID()
		s.prefix = "airlock-" + s.id
	}
	s.released, s.release = context.WithCancel(context.Background())
	t := o.Target
	var err error
	if s.mode, err = pickMode(s.c, o.Mode, &o.Hands); err != nil {
		return nil, fmt.Errorf("%s: %w", t, err)
	}
	h := o.Hands
	h.Namespace, h.Session, h.Broker, h.Template = t.Namespace, s.id, o.Broker, t.Template
	h.Expires = time.Now().Add(o.TTL).Truncate(time.Second)
	h.Secret = "airlock-" + s.id
	s.hands = h
	if s.mode == ModeSandbox {
		err = s.acquireClaim(ctx)
	} else {
		err = s.acquirePod(ctx)
	}
	if err != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if s.shared {
			_ = s.Disconnect(rctx) // the broker's session keeps the rest
		} else {
			_ = s.Release(rctx)
		}
		return nil, fmt.Errorf("%s: %w", t, err)
	}
	return s, nil
}

var sessionID = regexp.MustCompile(`^[0-9a-f]{12}$`)

// pickMode resolves ModeAuto: ModeSandbox when the cluster serves
// SandboxClaims, unless h asks for a workspace claim, which only plain
// Pods can mount (a warm pod was made before the session and its claim),
// the userns pod security or a runtime class (a warm pod's spec, its
// runtimeClassName included, is its template's, and a claim names no
// runtime: the grant's stronger runtime would be dropped silently). An
// explicit ModeSandbox with any of them is refused.
func pickMode(c *Clients, m Mode, h *Hands) (Mode, error) {
	switch {
	case m == ModeSandbox && (h.WorkspaceSize != "" || h.Workspace != ""):
		return "", errors.New("a workspace claim (the grant's remote.workspace_size): agent-sandbox warm pods cannot mount a per-session PersistentVolumeClaim (they are warmed before the session exists); use plain Pods or drop the workspace claim")
	case m == ModeSandbox && h.userns():
		return "", fmt.Errorf("remote.pod_security = %q: agent-sandbox warm pods are the SandboxTemplate's, made before the session; use plain Pods, whose spec the broker makes", grant.PodSecurityUserns)
	case m == ModeSandbox && h.RuntimeClass != "":
		return "", fmt.Errorf("remote.runtime_class = %q: agent-sandbox warm pods run under their SandboxTemplate's runtime, made before the session, and a claim cannot choose it; use plain Pods, whose spec the broker makes", h.RuntimeClass)
	case m != ModeAuto:
		return m, nil
	case h.WorkspaceSize != "" || h.Workspace != "" || h.userns() || h.RuntimeClass != "":
		return ModePods, nil
	}
	ok, err := HasSandboxAPI(c)
	if err != nil {
		return "", fmt.Errorf("asking the cluster which APIs it serves: %w", err)
	}
	if ok {
		return ModeSandbox, nil
	}
	return ModePods, nil
}

func randomID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// ID is the session's id, its airlock.dev/session label.
func (s *Session) ID() string { return s.id }

// Mode is how the session got its hands.
func (s *Session) Mode() Mode { return s.mode }

// Endpoint names the hands for records: the target, never a token.
func (s *Session) Endpoint() string { return s.o.Target.String() }

func (s *Session) acquirePod(ctx context.Context) error {
	ns, tpl := s.o.Target.Namespace, s.o.Target.Template
	pt, err := s.c.Kube.CoreV1().PodTemplates(ns).Get(ctx, tpl, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		why := ""
		if s.hands.WorkspaceSize != "" {
			why = " (the grant's remote.workspace_size needs plain Pods: agent-sandbox warm pods cannot mount a per-session claim)"
		}
		if s.hands.userns() {
			why = fmt.Sprintf(" (the grant's remote.pod_security = %q needs plain Pods: agent-sandbox warm pods have their template's spec)", grant.PodSecurityUserns)
		}
		return fmt.Errorf("no PodTemplate %q in namespace %q: create the hands' template (deploy/pods/podtemplate.yaml)%s", tpl, ns, why)
	}
	if err != nil {
		return fmt.Errorf("reading PodTemplate %s/%s: %w", ns, tpl, err)
	}
	if len(pt.Template.Spec.Containers) == 0 {
		return fmt.Errorf("PodTemplate %s/%s has no container to take the image from", ns, tpl)
	}
	h := &s.hands
	if h.Image == "" {
		h.Image = pt.Template.Spec.Containers[0].Image
	}
	h.NodeSelector = pt.Template.Spec.NodeSelector
	h.Tolerations = pt.Template.Spec.Tolerations
	h.ImagePullSecrets = pt.Template.Spec.ImagePullSecrets
	if h.RuntimeClass == "" && pt.Template.Spec.RuntimeClassName != nil {
		h.RuntimeClass = *pt.Template.Spec.RuntimeClassName
	}
	if err := validateHands(h); err != nil {
		return err
	}
	if s.shared {
		reused, err := s.reuse(ctx)
		if err != nil {
			return err
		}
		if reused {
			return s.createPod(ctx)
		}
	}
	certEnd := h.Expires
	if s.shared {
		// Later connections move the expiry on, up to the certificate's end.
		certEnd = time.Now().Add(MaxSessionLife)
	}
	if s.shared {
		s.creds, err = keyedCredentials(s.o.Key, s.id, certEnd)
	} else {
		s.creds, err = newCredentials(certEnd)
	}
	if err != nil {
		return fmt.Errorf("making the session's token and certificate: %w", err)
	}
	immutable := true
	sec := &corev1.Secret{
		ObjectMeta: h.meta(h.Secret),
		Immutable:  &immutable,
		Type:       corev1.SecretTypeOpaque,
		Data: map[string][]byte{
			keyToken: []byte(s.creds.token),
			keyCert:  s.creds.certPEM,
			keyKey:   s.creds.keyPEM,
		},
	}
	if s.secret, err = s.c.Kube.CoreV1().Secrets(ns).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating the session's Secret %s: %w", h.Secret, err)
	}
	if h.WorkspaceSize != "" {
		if h.Workspace != "" {
			return fmt.Errorf("the hands name both a workspace claim %q and a size for a new one", h.Workspace)
		}
		if err := s.createWorkspace(ctx); err != nil {
			return err
		}
	}
	if err := s.createPolicy(ctx); err != nil {
		return err
	}
	return s.createPod(ctx)
}

// podMargin is how long before its session's objects expire a pod of a
// broker's session ends (at most a tenth of the TTL).
const podMargin = 10 * time.Minute

// MaxSessionLife bounds a broker's session (Options.Session) however often
// it reconnects: its certificate ends then, and each connection moves the
// objects' expiry on by the TTL, never past it.
const MaxSessionLife = 30 * 24 * time.Hour

func (s *Session) createWorkspace(ctx context.Context) error {
	h := &s.hands
	h.Workspace = h.Secret
	own := s.owner()
	pvc, err := PersistentVolumeClaim(h, &own)
	if err != nil {
		return err
	}
	made, err := s.c.Kube.CoreV1().PersistentVolumeClaims(h.Namespace).Create(ctx, pvc, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating the session's workspace PersistentVolumeClaim %s: %w", pvc.Name, err)
	}
	s.workspace, s.workspaceUID = pvc.Name, made.UID
	return nil
}

func (s *Session) createPolicy(ctx context.Context) error {
	np := NetworkPolicy(&s.hands, s.hands.Secret)
	np.OwnerReferences = []metav1.OwnerReference{s.owner()}
	made, err := s.c.Kube.NetworkingV1().NetworkPolicies(s.hands.Namespace).Create(ctx, np, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating the session's NetworkPolicy %s: %w", np.Name, err)
	}
	s.policyUID = made.UID
	return nil
}

// reuse takes up the broker's session's Secret, workspace claim and
// policy when an earlier connection made them: their labels must be this
// session's and this broker's; their expiry moves to the TTL from now
// (never past the certificate's end); pods earlier connections left are
// deleted. It reports false when there is no Secret yet. A missing claim
// or policy is made again; the claim then starts empty, which is logged.
func (s *Session) reuse(ctx context.Context) (bool, error) {
	h := &s.hands
	ns, name := h.Namespace, h.Secret
	core := s.c.Kube.CoreV1()
	sec, err := core.Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading the session's Secret %s: %w", name, err)
	}
	if err := s.ours("Secret", &sec.ObjectMeta); err != nil {
		return false, err
	}
	if s.creds, err = credentialsFrom(name, sec.Data); err != nil {
		return false, err
	}
	if !s.creds.sameAs(s.o.Key, s.id) {
		return false, fmt.Errorf("the session's Secret %s/%s holds a token or certificate this session did not make (another party put it in the session's place; its labels are the session's): not using it, nor dialling a pod that mounts it",
			ns, name)
	}
	if end := s.creds.notAfter.Add(-time.Hour); h.Expires.After(end) {
		h.Expires = end
	}
	if !h.Expires.After(time.Now()) {
		return false, fmt.Errorf("the session's Secret %s: its certificate ends at %s (a broker's session lives at most %s): start a new session",
			name, s.creds.notAfter.UTC().Format(time.RFC3339), MaxSessionLife)
	}
	// A pod an earlier connection left (its helper was killed) would hold
	// the ReadWriteOnce claim: this connection has made none yet, so every
	// pod of the session is such a leftover.
	sel := LabelManagedBy + "=" + ManagedBy + "," + LabelSession + "=" + s.id + "," + LabelBroker + "=" + h.Broker
	pods, err := core.Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return false, fmt.Errorf("listing the session's earlier pods: %w", err)
	}
	for _, p := range pods.Items {
		s.log.Warn("deleting a pod an earlier connection of the session left", "pod", p.Name, "session", s.id)
		s.deletePod(ctx, p.Name, p.UID)
	}
	patch := expiryPatch(h.Expires)
	if s.secret, err = core.Secrets(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return false, fmt.Errorf("refreshing the expiry of the session's Secret %s: %w", name, err)
	}
	if h.WorkspaceSize != "" {
		pvc, err := core.PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			s.log.Warn("the session's workspace claim is gone; making a new, empty one", "claim", name, "session", s.id)
			if err := s.createWorkspace(ctx); err != nil {
				return false, err
			}
		case err != nil:
			return false, fmt.Errorf("reading the session's workspace PersistentVolumeClaim %s: %w", name, err)
		default:
			if err := s.ours("PersistentVolumeClaim", &pvc.ObjectMeta); err != nil {
				return false, err
			}
			made, err := core.PersistentVolumeClaims(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
			if err != nil {
				return false, fmt.Errorf("refreshing the expiry of the session's workspace PersistentVolumeClaim %s: %w", name, err)
			}
			h.Workspace, s.workspace, s.workspaceUID = name, name, made.UID
		}
	}
	np, err := s.c.Kube.NetworkingV1().NetworkPolicies(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	if err == nil {
		s.policyUID = np.UID
	}
	if apierrors.IsNotFound(err) {
		err = s.createPolicy(ctx)
	}
	if err != nil {
		return false, fmt.Errorf("refreshing the expiry of the session's NetworkPolicy %s: %w", name, err)
	}
	s.log.Info("took up the session's Secret and workspace", "namespace", ns, "secret", name, "session", s.id, "expires", h.Expires)
	return true, nil
}

// ours refuses an object of the session's name that is not this broker's
// session's: another broker's, another session's or not airlock's.
func (s *Session) ours(kind string, m *metav1.ObjectMeta) error {
	h := &s.hands
	l := m.Labels
	if l[LabelManagedBy] == ManagedBy && l[LabelSession] == s.id && l[LabelBroker] == h.Broker && l[LabelTemplate] == h.Template {
		return nil
	}
	return fmt.Errorf("%s %s/%s exists but is not this session's (its labels %s=%q, %s=%q, %s=%q; want session %s of broker %s, template %s): not using it",
		kind, m.Namespace, m.Name, LabelManagedBy, l[LabelManagedBy], LabelSession, l[LabelSession], LabelBroker, l[LabelBroker], s.id, h.Broker, h.Template)
}

// expiryPatch is a merge patch setting the expiry annotation.
func expiryPatch(t time.Time) []byte {
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{AnnotationExpiry: t.UTC().Format(time.RFC3339)}}})
	return b
}

// owner makes the session's Secret the owner of its pods and policy, so
// the cluster's garbage collector removes them with it.
func (s *Session) owner() metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "v1", Kind: "Secret", Name: s.secret.Name, UID: s.secret.UID}
}

// createPod creates the session's next pod and makes it current.
func (s *Session) createPod(ctx context.Context) error {
	s.pods++
	h := s.hands
	h.Name = s.prefix + "-" + strconv.Itoa(s.pods)
	if s.shared {
		// The pod ends a little before the session's objects expire, so
		// the broker's reconnect takes them up before another broker's
		// sweep may take them for garbage.
		h.Expires = h.Expires.Add(-min(podMargin, s.o.TTL/10))
	}
	now := time.Now()
	if !h.Expires.After(now) {
		// Its deadline would be past: no pod outlives the session's expiry.
		return fmt.Errorf("the session's hands expired at %s (the TTL, %s, bounds a session): start a new session", h.Expires.UTC().Format(time.RFC3339), s.o.TTL)
	}
	own := s.owner()
	p := Pod(&h, now, &own)
	made, err := s.c.Kube.CoreV1().Pods(h.Namespace).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating the hands' pod %s: %w", h.Name, err)
	}
	s.pod, s.podUID, s.podSpec = h.Name, made.UID, &p.Spec
	s.log.Info("created the hands' pod", "namespace", h.Namespace, "pod", h.Name, "session", s.id)
	return nil
}

// errGone says the pod (or claim) ended: make another.
var errGone = errors.New("gone")

// Dial returns a connection to the session's hands, waiting for the pod
// to be ready, and replacing it when it has ended.
func (s *Session) Dial(ctx context.Context) (toolserver.Conn, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.released, cancel)()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, ErrReleased
	}
	var ip string
	var err error
	if s.mode == ModeSandbox {
		ip, err = s.claimAddr(ctx)
	} else {
		ip, err = s.podAddr(ctx)
	}
	if err != nil {
		return nil, err
	}
	url := "wss://" + net.JoinHostPort(ip, strconv.Itoa(int(s.hands.port()))) + "/"
	return toolserver.DialWebSocket(ctx, url, s.creds.token, s.creds.clientTC)
}

// podAddr returns the current pod's IP once it is ready, replacing a pod
// that ended.
func (s *Session) podAddr(ctx context.Context) (string, error) {
	for range 3 {
		if s.pod == "" {
			if err := s.createPod(ctx); err != nil {
				return "", err
			}
		}
		ip, err := s.waitPod(ctx, s.pod)
		if !errors.Is(err, errGone) {
			return ip, err
		}
		s.log.Warn("the hands' pod ended; replacing it", "pod", s.pod, "why", err)
		s.deletePod(ctx, s.pod, s.podUID)
		s.pod = ""
	}
	return "", errors.New("three pods in a row ended before they were ready: see kubectl describe pod -l " + LabelSession + "=" + s.id)
}

// waitPod watches the pod until it is ready (its IP) or ends (errGone).
func (s *Session) waitPod(ctx context.Context, name string) (string, error) {
	pods := s.c.Kube.CoreV1().Pods(s.hands.Namespace)
	w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
	if err != nil {
		return "", fmt.Errorf("watching pod %s: %w", name, err)
	}
	defer w.Stop()
	p, err := pods.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", fmt.Errorf("pod %s was deleted: %w", name, errGone)
	}
	if err != nil {
		return "", fmt.Errorf("reading pod %s: %w", name, err)
	}
	for {
		if p.UID != s.podUID {
			return "", fmt.Errorf("pod %s (uid %s) is not the pod this session made (uid %s): another party replaced it; not dialling it (kubectl describe pod -n %s %s)",
				name, p.UID, s.podUID, s.hands.Namespace, name)
		}
		why := changedContainers(s.podSpec, &p.Spec)
		for k, v := range s.hands.Labels() {
			if p.Labels[k] != v {
				why = "label " + k + " (the session's NetworkPolicy selects the pod by it)"
			}
		}
		if why != "" {
			return "", fmt.Errorf("pod %s is not the pod this session made: its %s changed since; not dialling it (kubectl describe pod -n %s %s)", name, why, s.hands.Namespace, name)
		}
		if ip, err := podState(p); ip != "" || err != nil {
			return ip, err
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("waiting for pod %s to be ready%s: %w (kubectl describe pod -n %s %s)", name, notReady(p), ctx.Err(), s.hands.Namespace, name)
		case ev, ok := <-w.ResultChan():
			if !ok {
				return "", fmt.Errorf("waiting for pod %s: the watch ended", name)
			}
			np, isPod := ev.Object.(*corev1.Pod)
			if !isPod || np.Name != name {
				continue
			}
			if ev.Type == watch.Deleted {
				return "", fmt.Errorf("pod %s was deleted: %w", name, errGone)
			}
			p = np
		}
	}
}

// changedContainers names what of a pod's containers (image, command,
// arguments; the fields of a pod that can be changed after it is made)
// differs from the spec it was made with, or is "".
func changedContainers(made, now *corev1.PodSpec) string {
	if made == nil {
		return ""
	}
	if len(made.Containers) != len(now.Containers) || len(made.InitContainers) != len(now.InitContainers) || len(now.EphemeralContainers) > 0 {
		return "containers"
	}
	for i, c := range made.Containers {
		n := now.Containers[i]
		if c.Name != n.Name || c.Image != n.Image || !slices.Equal(c.Command, n.Command) || !slices.Equal(c.Args, n.Args) {
			return "container " + c.Name
		}
	}
	return ""
}

// notReady says what keeps p from being ready, as the kubelet and the
// scheduler report it (" (hands: ImagePullBackOff: ...)"), or "".
func notReady(p *corev1.Pod) string {
	var why []string
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status != corev1.ConditionTrue && c.Reason != "" {
			why = append(why, strings.TrimSpace("unscheduled: "+c.Reason+" "+c.Message))
		}
	}
	for _, cs := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil && w.Reason != "" {
			why = append(why, strings.TrimSpace(cs.Name+": "+w.Reason+" "+w.Message))
		}
	}
	if len(why) == 0 {
		return ""
	}
	return " (" + strings.Join(why, "; ") + ")"
}

// podState is the pod's IP when it is ready, errGone when it has ended.
func podState(p *corev1.Pod) (string, error) {
	if p.DeletionTimestamp != nil {
		return "", fmt.Errorf("pod %s is being deleted: %w", p.Name, errGone)
	}
	switch p.Status.Phase {
	case corev1.PodFailed, corev1.PodSucceeded:
		why := p.Status.Reason
		if why == "" {
			why = string(p.Status.Phase)
		}
		return "", fmt.Errorf("pod %s ended (%s): %w", p.Name, why, errGone)
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue && p.Status.PodIP != "" {
			if err := checkStatusIP(p.Status.PodIP); err != nil {
				return "", fmt.Errorf("pod %s: %w", p.Name, err)
			}
			return p.Status.PodIP, nil
		}
	}
	return "", nil
}

// checkStatusIP refuses an address from the cluster's status that is not
// an IP (a host name the broker would resolve and dial where it runs; a
// port, a path or user info, which would change the URL it dials) or
// names no host (unspecified, a zone).
func checkStatusIP(a string) error {
	ip, err := netip.ParseAddr(a)
	if err != nil || ip.Zone() != "" || ip.IsUnspecified() {
		return fmt.Errorf("the status names %q as its address, which is not an IP address: not dialling it", a)
	}
	return nil
}

// deletePod deletes the pod name of UID uid (any UID when empty): one
// another party made since under its name is left alone.
func (s *Session) deletePod(ctx context.Context, name string, uid types.UID) {
	zero := int64(0)
	err := s.c.Kube.CoreV1().Pods(s.hands.Namespace).Delete(ctx, name, withUID(metav1.DeleteOptions{GracePeriodSeconds: &zero}, uid))
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		s.log.Warn("deleting the hands' pod", "pod", name, "err", err)
	}
}

// Release deletes the session's pod, claim, workspace claim, policy and
// Secret. Dial fails after it. It is safe to call more than once.
func (s *Session) Release(ctx context.Context) error { return s.end(ctx, true) }

// Disconnect ends this connection's part of a broker's session
// (Options.Session): it deletes the current pod or SandboxClaim and keeps
// the Secret, the policy and the workspace claim for the broker's next
// connection (ReleaseSession deletes them; the sweep, when the broker is
// gone or they expire). Dial fails after it. It is safe to call more than
// once.
func (s *Session) Disconnect(ctx context.Context) error { return s.end(ctx, false) }

func (s *Session) end(ctx context.Context, all bool) error {
	s.release()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	ns := s.hands.Namespace
	var errs []error
	// Each delete names the UID of the object the session made or took
	// up: one another party made since under its name is not the
	// session's to delete (the API server answers a conflict).
	del := func(what string, err error) {
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("deleting %s: %w", what, err))
		}
	}
	bg := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{PropagationPolicy: &bg}
	if s.claim != "" {
		del("SandboxClaim "+s.claim, s.c.Dynamic.Resource(ClaimResource).Namespace(ns).Delete(ctx, s.claim, withUID(opts, s.claimUID)))
		s.claim = ""
	}
	if s.pod != "" {
		zero := int64(0)
		del("pod "+s.pod, s.c.Kube.CoreV1().Pods(ns).Delete(ctx, s.pod, withUID(metav1.DeleteOptions{GracePeriodSeconds: &zero}, s.podUID)))
		s.pod = ""
	}
	if all && s.workspace != "" {
		del("PersistentVolumeClaim "+s.workspace, s.c.Kube.CoreV1().PersistentVolumeClaims(ns).Delete(ctx, s.workspace, withUID(opts, s.workspaceUID)))
		s.workspace = ""
	}
	if all && s.secret != nil {
		del("NetworkPolicy "+s.secret.Name, s.c.Kube.NetworkingV1().NetworkPolicies(ns).Delete(ctx, s.secret.Name, withUID(opts, s.policyUID)))
		del("Secret "+s.secret.Name, s.c.Kube.CoreV1().Secrets(ns).Delete(ctx, s.secret.Name, withUID(opts, s.secret.UID)))
		s.secret = nil
	}
	if len(errs) > 0 {
		return fmt.Errorf("releasing the hands of session %s (what is left expires at %s, or the next start removes it): %w",
			s.id, s.hands.Expires.UTC().Format(time.RFC3339), errors.Join(errs...))
	}
	return nil
}

// ReleaseSession deletes what a broker's session (Options.Session id)
// holds in the target's namespace: every pod, SandboxClaim (claims says the
// cluster serves them), workspace claim, NetworkPolicy and Secret labelled
// with the session id and broker. Objects of another broker are left
// alone. What it removed is returned.
func ReleaseSession(ctx context.Context, c *Clients, t Target, id, broker string, claims bool) ([]Leftover, error) {
	if !sessionID.MatchString(id) {
		return nil, fmt.Errorf("session id %q is not 12 lower-case hex digits", id)
	}
	sel := metav1.ListOptions{LabelSelector: LabelManagedBy + "=" + ManagedBy + "," + LabelSession + "=" + id + "," + LabelBroker + "=" + broker}
	ns := t.Namespace
	core, net := c.Kube.CoreV1(), c.Kube.NetworkingV1()
	var out []Leftover
	var errs []error
	// Each delete names the UID listed (onlyThis): an object made since
	// under the name is not the one listed, and the API server answers a
	// conflict.
	remove := func(kind string, objs []metav1.Object, listErr error, del func(string, metav1.DeleteOptions) error) {
		if listErr != nil {
			errs = append(errs, fmt.Errorf("listing the session's %ss: %w", kind, listErr))
			return
		}
		for _, m := range objs {
			n := m.GetName()
			err := del(n, onlyThis(m))
			if apierrors.IsConflict(err) {
				continue
			}
			if err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("deleting %s %s: %w", kind, n, err))
				continue
			}
			out = append(out, Leftover{Kind: kind, Name: n, Why: "the broker ended session " + id})
		}
	}
	zero := int64(0)
	bg := metav1.DeletePropagationBackground
	del := metav1.DeleteOptions{PropagationPolicy: &bg}
	if claims {
		rc := c.Dynamic.Resource(ClaimResource).Namespace(ns)
		l, err := rc.List(ctx, sel)
		var objs []metav1.Object
		if err == nil {
			for i := range l.Items {
				objs = append(objs, &l.Items[i])
			}
		}
		remove("SandboxClaim", objs, err, func(n string, o metav1.DeleteOptions) error { return rc.Delete(ctx, n, with(del, o)) })
	}
	{
		l, err := core.Pods(ns).List(ctx, sel)
		var objs []metav1.Object
		if err == nil {
			for i := range l.Items {
				objs = append(objs, &l.Items[i])
			}
		}
		remove("Pod", objs, err, func(n string, o metav1.DeleteOptions) error {
			return core.Pods(ns).Delete(ctx, n, with(metav1.DeleteOptions{GracePeriodSeconds: &zero}, o))
		})
	}
	{
		l, err := core.PersistentVolumeClaims(ns).List(ctx, sel)
		var objs []metav1.Object
		if err == nil {
			for i := range l.Items {
				objs = append(objs, &l.Items[i])
			}
		}
		remove("PersistentVolumeClaim", objs, err, func(n string, o metav1.DeleteOptions) error {
			return core.PersistentVolumeClaims(ns).Delete(ctx, n, with(del, o))
		})
	}
	{
		l, err := net.NetworkPolicies(ns).List(ctx, sel)
		var objs []metav1.Object
		if err == nil {
			for i := range l.Items {
				objs = append(objs, &l.Items[i])
			}
		}
		remove("NetworkPolicy", objs, err, func(n string, o metav1.DeleteOptions) error {
			return net.NetworkPolicies(ns).Delete(ctx, n, with(del, o))
		})
	}
	{
		l, err := core.Secrets(ns).List(ctx, sel)
		var objs []metav1.Object
		if err == nil {
			for i := range l.Items {
				objs = append(objs, &l.Items[i])
			}
		}
		remove("Secret", objs, err, func(n string, o metav1.DeleteOptions) error { return core.Secrets(ns).Delete(ctx, n, with(del, o)) })
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("%s: releasing session %s (what is left expires, or the next start on this host removes it once the broker is gone): %w", t, id, errors.Join(errs...))
	}
	return out, nil
}
