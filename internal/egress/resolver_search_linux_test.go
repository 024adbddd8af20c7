//go:build linux

package egress

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
	"golang.org/x/sys/unix"
)

// The proxy checks a name against the grant and must resolve that name and
// no other. A system resolver expands a name that does not resolve as it
// is with the host's resolv.conf search list ("x.a.test" becomes
// "x.a.test.corp.internal"; with Kubernetes' ndots:5 the search list is
// even tried first), so the address dialled would belong to a name the
// grant never saw, while the audit record names the granted one.
//
// The test runs the proxy's default resolver in a mount and network
// namespace of its own, with a resolv.conf that has a search list and a
// DNS server on the namespace's loopback.
const searchChildEnv = "AIRLOCK_TEST_SEARCH_LIST_CHILD"

func TestDefaultResolverIgnoresSearchList(t *testing.T) {
	if os.Getenv(searchChildEnv) == "1" {
		searchListChild(t)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root for a mount and network namespace")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestDefaultResolverIgnoresSearchList$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), searchChildEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWNET}
	out, err := cmd.CombinedOutput()
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Skipf("cannot start a child in new namespaces: %v", err)
		}
		t.Fatalf("child failed: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestDefaultResolverIgnoresSearchList") {
		t.Fatalf("child did not pass:\n%s", out)
	}
}

func searchListChild(t *testing.T) {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		t.Fatalf("making mounts private: %v", err)
	}
	dir := t.TempDir()
	conf := filepath.Join(dir, "resolv.conf")
	if err := os.WriteFile(conf, []byte("nameserver 127.0.0.1\nsearch corp.internal\noptions ndots:5 attempts:1 timeout:2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(conf, "/etc/resolv.conf", "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind-mounting resolv.conf: %v", err)
	}
	hosts := filepath.Join(dir, "hosts")
	if err := os.WriteFile(hosts, []byte("127.0.0.1 localhost\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(hosts, "/etc/hosts", "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind-mounting hosts: %v", err)
	}
	loUp(t)
	dns := serveDNS(t, map[string]netip.Addr{
		// "x.a.test." itself does not exist; the search list's expansion does.
		"x.a.test.corp.internal.": netip.MustParseAddr("93.184.216.99"),
		"a.test.":                 netip.MustParseAddr("93.184.216.34"),
		// With ndots:5 (as in every Kubernetes pod) the search list comes
		// first, so a name in the search domain shadows the granted one.
		"a.test.corp.internal.": netip.MustParseAddr("93.184.216.98"),
	})

	h := newHarness(t, func(o *Options) { o.Resolver = nil })
	h.policy.grant("x.a.test:7")

	// A name that exists is still found.
	c := h.conn()
	io.WriteString(c, "CONNECT a.test:7 HTTP/1.1\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT a.test: %v %v", resp, err)
	}
	if d := h.next(); !d.Allowed || d.Addr != netip.MustParseAddr("93.184.216.34") {
		t.Errorf("CONNECT a.test: dialled %v, want 93.184.216.34:7 (Decision %+v)", h.dial.dialed(), d)
	}

	c = h.conn()
	io.WriteString(c, "CONNECT x.a.test:7 HTTP/1.1\r\n\r\n")
	resp, err = http.ReadResponse(bufio.NewReader(c), &http.Request{Method: http.MethodConnect})
	if err != nil {
		t.Fatal(err)
	}
	d := h.next()
	for _, a := range h.dial.dialed() {
		if strings.HasPrefix(a, "93.184.216.99:") {
			t.Errorf("dialled %s, the address of x.a.test.corp.internal, for a CONNECT to x.a.test (status %d, Decision %+v)", a, resp.StatusCode, d)
		}
	}
	if d.Allowed || resp.StatusCode == 200 {
		t.Errorf("x.a.test, which does not exist, was allowed: status %d, Decision %+v", resp.StatusCode, d)
	}
	for _, q := range dns.queries() {
		if strings.HasSuffix(q, ".corp.internal.") {
			t.Errorf("the proxy's resolver asked for %q, a name the grant was never asked about", q)
		}
	}
}

// loUp brings the namespace's loopback up.
func loUp(t *testing.T) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		t.Fatal(err)
	}
	ifr.SetUint16(unix.IFF_UP | unix.IFF_RUNNING)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		t.Fatalf("bringing lo up: %v", err)
	}
}

type dnsServer struct {
	mu sync.Mutex
	qs []string
}

func (s *dnsServer) queries() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.qs...)
}

// serveDNS answers A queries for names in zone on 127.0.0.1:53 (UDP),
// NXDOMAIN for other names, and an empty answer for other types of a known
// name.
func serveDNS(t *testing.T, zone map[string]netip.Addr) *dnsServer {
	pc, err := net.ListenPacket("udp", "127.0.0.1:53")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	s := &dnsServer{}
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var p dnsmessage.Parser
			hdr, err := p.Start(buf[:n])
			if err != nil {
				continue
			}
			q, err := p.Question()
			if err != nil {
				continue
			}
			name := strings.ToLower(q.Name.String())
			s.mu.Lock()
			s.qs = append(s.qs, name)
			s.mu.Unlock()
			rh := dnsmessage.Header{ID: hdr.ID, Response: true, Authoritative: true, RecursionDesired: hdr.RecursionDesired, RecursionAvailable: true}
			addr, ok := zone[name]
			if !ok {
				rh.RCode = dnsmessage.RCodeNameError
			}
			b := dnsmessage.NewBuilder(nil, rh)
			b.EnableCompression()
			b.StartQuestions()
			b.Question(q)
			b.StartAnswers()
			if ok && q.Type == dnsmessage.TypeA {
				b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 0}, dnsmessage.AResource{A: addr.As4()})
			}
			msg, err := b.Finish()
			if err == nil {
				pc.WriteTo(msg, from)
			}
		}
	}()
	return s
}
