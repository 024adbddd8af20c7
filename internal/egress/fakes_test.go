package egress

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// fakePolicy grants "host:port" keys and private prefixes.
type fakePolicy struct {
	mu      sync.Mutex
	hosts   map[string]bool
	private []netip.Prefix
}

// grant adds "host:port" keys while the proxy may be running.
func (f *fakePolicy) grant(keys ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, k := range keys {
		f.hosts[k] = true
	}
}

// allowPrivate adds a private prefix while the proxy may be running.
func (f *fakePolicy) allowPrivate(p string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.private = append(f.private, netip.MustParsePrefix(p))
}

func (f *fakePolicy) AllowHost(host string, port int) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k := net.JoinHostPort(host, strconv.Itoa(port))
	if f.hosts[k] {
		return "host " + k, true
	}
	return "", false
}

func (f *fakePolicy) AllowPrivate(a netip.Addr, _ int) (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.private {
		if p.Contains(a) {
			return "cidr " + p.String(), true
		}
	}
	return "", false
}

// fakeResolver answers from a table; a name with several answer sets gets
// them in turn, one per call (for rebinding), the last repeating.
type fakeResolver struct {
	mu      sync.Mutex
	answers map[string][][]netip.Addr
	calls   []string
}

func (r *fakeResolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, network+" "+host)
	sets := r.answers[host]
	if len(sets) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	ans := sets[0]
	if len(sets) > 1 {
		r.answers[host] = sets[1:]
	}
	return ans, nil
}

// answer sets the answers for host while the proxy may be running.
func (r *fakeResolver) answer(host string, sets ...[]netip.Addr) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.answers[host] = sets
}

func (r *fakeResolver) callCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.calls)
}

// recDialer records every address dialled. It fails with errs[address] if
// set; otherwise it returns one end of a Unix socket pair whose other end is
// handed to serve (an echo server by default).
type recDialer struct {
	t     testing.TB
	mu    sync.Mutex
	errs  map[string]error
	serve func(net.Conn)
	addrs []string
}

func (d *recDialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	d.mu.Lock()
	d.addrs = append(d.addrs, address)
	err := d.errs[address]
	serve := d.serve
	d.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if serve == nil {
		serve = echo
	}
	a, b := unixPair(d.t)
	go serve(b)
	return a, nil
}

func (d *recDialer) dialed() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.addrs...)
}

// echo copies everything back, then half-closes, then closes.
func echo(c net.Conn) {
	defer c.Close()
	io.Copy(c, c)
	c.(*net.UnixConn).CloseWrite()
}

// shortDir returns a short temporary directory (Unix socket paths are limited to 108 bytes).
func shortDir(t testing.TB) string {
	d, err := os.MkdirTemp("", "eg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

// unixPair returns two connected *net.UnixConn.
func unixPair(t testing.TB) (*net.UnixConn, *net.UnixConn) {
	f, err := pairListener(t)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type res struct {
		c   *net.UnixConn
		err error
	}
	ch := make(chan res, 1)
	go func() {
		c, err := f.AcceptUnix()
		ch <- res{c, err}
	}()
	a, err := net.DialUnix("unix", nil, f.Addr().(*net.UnixAddr))
	if err != nil {
		t.Fatal(err)
	}
	r := <-ch
	if r.err != nil {
		t.Fatal(r.err)
	}
	return a, r.c
}

var (
	pairDirOnce sync.Once
	pairDir     string
	pairSeq     int
	pairMu      sync.Mutex
)

func pairListener(t testing.TB) (*net.UnixListener, error) {
	pairDirOnce.Do(func() {
		d, err := os.MkdirTemp("", "egp")
		if err == nil {
			pairDir = d
		}
	})
	if pairDir == "" {
		return nil, errors.New("no temp dir for socket pairs")
	}
	pairMu.Lock()
	pairSeq++
	name := filepath.Join(pairDir, strconv.Itoa(pairSeq))
	pairMu.Unlock()
	return net.ListenUnix("unix", &net.UnixAddr{Name: name, Net: "unix"})
}

// harness runs a Proxy on a real Unix socket with fakes behind it.
type harness struct {
	t         *testing.T
	p         *Proxy
	sock      string
	policy    *fakePolicy
	res       *fakeResolver
	dial      *recDialer
	decisions chan Decision
	// stop cancels Serve's context, as the end of the sandbox does, and
	// reports whether Serve returned (at once on the first call).
	stop func() bool
}

func newHarness(t *testing.T, tweak func(*Options)) *harness {
	t.Helper()
	h := &harness{
		t: t,
		policy: &fakePolicy{hosts: map[string]bool{
			"a.test:80": true, "a.test:443": true, "rb.test:80": true, "mixed.test:80": true,
			"lo.test:80": true, "gone.test:80": true, "priv.test:80": true, "v6.test:80": true,
			"93.184.216.34:80": true, "127.0.0.1:80": true, "10.1.2.3:80": true, "[::1]:80": true,
			// Port 7 (echo) for tests of the relay itself: a tunnel to port 80
			// carries HTTP only.
			"a.test:7": true, "rb.test:7": true, "v6.test:7": true, "priv.test:7": true,
			"93.184.216.34:7": true,
		}},
		res: &fakeResolver{answers: map[string][][]netip.Addr{
			"a.test":     {{netip.MustParseAddr("93.184.216.34")}},
			"rb.test":    {{netip.MustParseAddr("93.184.216.34")}, {netip.MustParseAddr("127.0.0.1")}},
			"mixed.test": {{netip.MustParseAddr("93.184.216.34"), netip.MustParseAddr("10.0.0.1")}},
			"lo.test":    {{netip.MustParseAddr("::1")}},
			"priv.test":  {{netip.MustParseAddr("10.1.2.3")}},
			"v6.test":    {{netip.MustParseAddr("2606:2800:220:1:248:1893:25c8:1946")}},
			"evil.test":  {{netip.MustParseAddr("93.184.216.35")}},
		}},
		decisions: make(chan Decision, 100),
	}
	h.dial = &recDialer{t: t}
	o := &Options{
		Sandbox:          "sb1",
		Policy:           h.policy,
		Resolver:         h.res,
		Dialer:           h.dial,
		OnDecision:       func(d Decision) { h.decisions <- d },
		HandshakeTimeout: 2 * time.Second,
		IdleTimeout:      5 * time.Second,
		DialTimeout:      2 * time.Second,
	}
	if tweak != nil {
		tweak(o)
	}
	h.p = New(o)
	h.sock = filepath.Join(shortDir(t), "egress.sock")
	l, err := h.p.ListenUnix(h.sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.p.Serve(ctx, l) }()
	var once sync.Once
	h.stop = func() bool {
		ok := false
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Serve: %v", err)
				}
				ok = true
			case <-time.After(10 * time.Second):
				t.Error("Serve did not return after cancel")
			}
		})
		return ok
	}
	t.Cleanup(func() { h.stop() })
	return h
}

func (h *harness) conn() *net.UnixConn {
	h.t.Helper()
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: h.sock, Net: "unix"})
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	return c
}

// next waits for the next Decision.
func (h *harness) next() Decision {
	h.t.Helper()
	select {
	case d := <-h.decisions:
		return d
	case <-time.After(5 * time.Second):
		h.t.Fatal("no Decision reported")
		return Decision{}
	}
}
