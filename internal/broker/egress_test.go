package broker_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/egresstest"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandboxtest"
)

const egressSecret = "s3cr3t-egress-token-77"

// egressWorld is a session whose grant allows a.test and d.test (loopback
// fixtures, so also listed as private) with a secret for a.test; b.test is a
// fixture the grant does not name.
type egressWorld struct {
	a, b, d  *egresstest.Server
	sentinel int
	hits     func() int
	records  string
	s        *broker.Session
}

func newEgressWorld(t *testing.T, backend sandbox.Backend) *egressWorld {
	t.Helper()
	return newEgressWorldLogged(t, backend, nil)
}

// newEgressWorldLogged is newEgressWorld with the proxies' logger.
func newEgressWorldLogged(t *testing.T, backend sandbox.Backend, log *slog.Logger) *egressWorld {
	t.Helper()
	ca := egresstest.NewCA(t, "a.test", "b.test", "d.test")
	w := &egressWorld{
		a: egresstest.Serve(t, ca, "a.test", nil),
		b: egresstest.Serve(t, ca, "b.test", nil),
		d: egresstest.Serve(t, ca, "d.test", nil),
	}
	w.sentinel, w.hits = egresstest.Sentinel(t)
	ws, caDir := t.TempDir(), t.TempDir()
	caFile := ca.WriteFile(t, caDir)
	toml := fmt.Sprintf(`
[paths]
read_write = ["."]
read_only = [%[3]q]
[network]
hosts = [%[1]q, %[2]q]
private = [%[1]q, %[2]q]
[secrets.TOKEN]
from = "env:TOKEN"
tools = ["http_fetch"]
hosts = [%[1]q]
`, w.a.HostPort(), w.d.HostPort(), caDir)
	g, err := grant.Parse([]byte(toml), "egress.toml", ws)
	if err != nil {
		t.Fatal(err)
	}
	w.records = t.TempDir()
	w.s, err = broker.Open(&broker.Options{
		Grant:      g,
		Backend:    backend,
		RecordsDir: w.records,
		Secrets:    map[string]string{"TOKEN": egressSecret},
		Egress: &broker.EgressOptions{
			Resolver: egresstest.NewResolver("a.test", "b.test", "d.test"),
			Env:      []string{"SSL_CERT_FILE=" + caFile},
			Logger:   log,
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.s.Close() })
	return w
}

func (w *egressWorld) egressRecords(t *testing.T, callID string) []audit.Record {
	t.Helper()
	var out []audit.Record
	for _, r := range records(t, w.records) {
		if r.Kind == audit.KindEgress && r.CallID == callID {
			out = append(out, r)
		}
	}
	return out
}

func TestHTTPFetchThroughTheSandbox(t *testing.T) {
	// The proxies' socket directories go to a TMPDIR of this test's own.
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	w := newEgressWorld(t, sandboxtest.Native(t))
	redirect := func(to string) string { return w.a.URL("/redirect?to=" + to) }
	tests := []struct {
		name    string
		url     string
		refused bool // by the grant, before any sandbox
		isError bool
		want    string
		egress  []string // "host decision" of the call's egress records, in order
	}{
		{name: "allowed", url: w.a.URL("/ok"), want: "hello from a.test\n[http 200]", egress: []string{"a.test allowed"}},
		{name: "not granted", url: w.b.URL("/ok"), refused: true, want: "the grant does not allow this host and port"},
		{name: "redirect to a host not granted", url: redirect(w.b.URL("/ok")), isError: true,
			want: "refused by the egress proxy: redirect 1", egress: []string{"a.test allowed", "b.test refused"}},
		{name: "redirect to a private address", url: redirect(fmt.Sprintf("https://127.0.0.1:%d/", w.sentinel)), isError: true,
			want: "127.0.0.1:" + fmt.Sprint(w.sentinel) + " is not in the grant's network.hosts", egress: []string{"a.test allowed", "127.0.0.1 refused"}},
		{name: "redirect to the metadata address", url: redirect("https://169.254.169.254/latest/meta-data/"), isError: true,
			want: "169.254.169.254:443 is not in the grant's network.hosts", egress: []string{"a.test allowed", "169.254.169.254 refused"}},
		{name: "downgrade", url: redirect(fmt.Sprintf("http://a.test:%d/ok", w.a.Port)), isError: true,
			want: "a redirect from https down to http is never followed", egress: []string{"a.test allowed"}},
		{name: "loop", url: w.a.URL("/loop/0"), isError: true, want: "stopped after 5 redirects",
			egress: []string{"a.test allowed", "a.test allowed", "a.test allowed", "a.test allowed", "a.test allowed", "a.test allowed"}},
		{name: "secret to its host", url: w.a.URL("/auth"), want: "authorization present: true", egress: []string{"a.test allowed"}},
		{name: "secret not sent to another granted host", url: w.d.URL("/auth"), want: "authorization present: false", egress: []string{"d.test allowed"}},
		{name: "secret not past a change of host", url: redirect(w.d.URL("/auth")), want: "authorization present: false",
			egress: []string{"a.test allowed", "d.test allowed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, w.s, "http_fetch", fmt.Sprintf(`{"url":%q}`, tt.url))
			if res.Refused() != tt.refused {
				t.Fatalf("refused = %v, want %v: %+v", res.Refused(), tt.refused, res.Output)
			}
			if !tt.refused && (res.Class != broker.ClassOK || res.Output.IsError != tt.isError) {
				t.Errorf("class %s, IsError %v; want ok, %v: %q", res.Class, res.Output.IsError, tt.isError, res.Output.Content)
			}
			if !strings.Contains(res.Output.Content, tt.want) {
				t.Errorf("content %q lacks %q", res.Output.Content, tt.want)
			}
			for _, bad := range []string{egressSecret, "SECRET-BODY"} {
				if strings.Contains(res.Output.Content, bad) {
					t.Errorf("content holds %q: %q", bad, res.Output.Content)
				}
			}
			var got []string
			for _, r := range w.egressRecords(t, res.CallID) {
				got = append(got, r.Host+" "+r.Decision)
				if r.Rule == "" || r.Port == 0 {
					t.Errorf("egress record without rule or port: %+v", r)
				}
				if r.Decision == "allowed" && r.Addr != "127.0.0.1" {
					t.Errorf("allowed egress record with addr %q", r.Addr)
				}
			}
			if strings.Join(got, ", ") != strings.Join(tt.egress, ", ") {
				t.Errorf("egress records %q, want %q", got, tt.egress)
			}
		})
	}
	if n := w.b.Accepts(); n != 0 {
		t.Errorf("b.test saw %d connections", n)
	}
	if n := w.hits(); n != 0 {
		t.Errorf("the sentinel saw %d connections", n)
	}
	for _, r := range w.d.Requests() {
		if v := r.Header.Get("Authorization"); v != "" {
			t.Errorf("d.test got Authorization %q", v)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "airlock-egress-*")); len(left) > 0 {
		t.Errorf("proxy socket directories left behind: %v", left)
	}
}

// Ordinary clients use the proxy variables; nothing else has a route out.
func TestShellEgress(t *testing.T) {
	w := newEgressWorld(t, sandboxtest.Native(t))
	shell := func(cmd string) string {
		t.Helper()
		b, _ := json.Marshal(map[string]string{"command": cmd})
		res := call(t, w.s, "shell", string(b))
		if res.Class != broker.ClassOK {
			t.Fatalf("shell %q: class %s: %q", cmd, res.Class, res.Output.Content)
		}
		return res.Output.Content
	}
	tests := []struct {
		name, cmd string
		want      []string
	}{
		{"curl through HTTPS_PROXY", `curl -sS --max-time 10 --cacert "$SSL_CERT_FILE" ` + w.a.URL("/ok"), []string{"hello from a.test", "[exit 0]"}},
		{"curl through ALL_PROXY (socks5h)", `curl -sS --max-time 10 --cacert "$SSL_CERT_FILE" --proxy "$ALL_PROXY" ` + w.a.URL("/ok"), []string{"hello from a.test", "[exit 0]"}},
		{"python through https_proxy", `python3 -c 'import os, ssl, sys, urllib.request as u; ctx = ssl.create_default_context(cafile=os.environ["SSL_CERT_FILE"]); print(u.urlopen(sys.argv[1], context=ctx, timeout=10).read().decode())' ` + w.a.URL("/ok"), []string{"hello from a.test", "[exit 0]"}},
		{"git through https_proxy", `git -c http.sslCAInfo="$SSL_CERT_FILE" ls-remote ` + w.a.URL("/repo.git") + ` 2>&1; git -c http.sslCAInfo="$SSL_CERT_FILE" ls-remote ` + w.b.URL("/repo.git") + ` 2>&1`, []string{"fatal: repository '" + w.a.URL("/repo.git") + "/' not found", "CONNECT tunnel failed, response 403"}},
		{"curl to a host not granted", `curl -sS --max-time 10 --cacert "$SSL_CERT_FILE" ` + w.b.URL("/ok"), []string{"403", "[exit 56]"}},
		{"curl with the proxy variables unset", `env -u HTTPS_PROXY -u https_proxy -u ALL_PROXY -u all_proxy -u HTTP_PROXY -u http_proxy curl -sS --max-time 5 -k https://127.0.0.1:` + fmt.Sprint(w.a.Port) + `/ok`, []string{"[exit 7]"}},
		{"curl --noproxy", `curl -sS --max-time 5 --noproxy '*' -k ` + w.a.URL("/ok"), []string{"[exit 6]"}},
		{"raw socket to an address", `bash -c 'exec 3<>/dev/tcp/192.0.2.1/80 && echo connected'`, []string{"Network is unreachable", "[exit 1]"}},
		{"raw socket to the fixture's port", `bash -c 'exec 3<>/dev/tcp/127.0.0.1/` + fmt.Sprint(w.a.Port) + ` && echo connected'`, []string{"Connection refused", "[exit 1]"}},
		{"raw socket to an IPv6 address", `bash -c 'exec 3<>/dev/tcp/2001:db8::1/80 && echo connected'`, []string{"unreachable", "[exit 1]"}},
		{"UDP to a resolver address", `bash -c 'exec 3<>/dev/udp/192.0.2.53/53 && echo connected'`, []string{"Network is unreachable", "[exit 1]"}},
		{"DNS lookup", `getent hosts example.com; echo "getent $?"`, []string{"getent 2"}},
		// (find does not list the proxy's socket: it is bind-mounted over a
		// placeholder file, whose directory entry says "regular file".)
		{"the only socket is this sandbox's proxy", `find / -path /proc -prune -o -type s -print 2>/dev/null; ls /run/airlock | grep -vx -e placeholders -e git-exclude`, []string{"]\nproxy.sock\n[exit 0]"}},
		{"only loopback", `cat /proc/net/dev | tail -n +3 | cut -d: -f1 | tr -d ' '`, []string{"lo\n[exit 0]"}},
		{"proxy variables", `env | grep -i _proxy | sort`, []string{"ALL_PROXY=socks5h://127.0.0.1:3128\n", "HTTPS_PROXY=http://127.0.0.1:3128\n", "NO_PROXY=\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := shell(tt.cmd)
			for _, s := range tt.want {
				if !strings.Contains(out, s) {
					t.Errorf("output %q lacks %q", out, s)
				}
			}
			if strings.Contains(out, "connected") {
				t.Errorf("a raw connection succeeded: %q", out)
			}
		})
	}
	if n := w.b.Accepts(); n != 0 {
		t.Errorf("b.test saw %d connections", n)
	}
	var allowed, refused bool
	for _, r := range records(t, w.records) {
		if r.Kind != audit.KindEgress {
			continue
		}
		allowed = allowed || r.Host == "a.test" && r.Decision == "allowed" && r.Addr == "127.0.0.1"
		refused = refused || r.Host == "b.test" && r.Decision == "refused" && r.Rule == "network.hosts"
	}
	if !allowed || !refused {
		t.Errorf("egress records: a.test allowed %v, b.test refused %v", allowed, refused)
	}
}

// A connection the native sandbox's forwarder hands over comes from its
// init, so the proxy holds it alone and splices it (internal/egress,
// peer_linux.go); one the payload sends on the proxy's socket itself is
// copied through a buffer, since the payload keeps a descriptor of it.
func TestSandboxHandoffSpliced(t *testing.T) {
	var logs lockedLog
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	w := newEgressWorldLogged(t, sandboxtest.Native(t), log)
	send := `python3 -c '
import array, socket, sys
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen(1)
c = socket.create_connection(l.getsockname()); a, _ = l.accept()
u = socket.socket(socket.AF_UNIX); u.connect("/run/airlock/proxy.sock")
u.sendmsg([b"\0"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [a.fileno()]))])
c.sendall(b"\x05\x01\x00"); print("greeting", c.recv(2).hex())
'`
	cmd := `curl -sS --max-time 10 --cacert "$SSL_CERT_FILE" ` + w.a.URL("/ok") + ` && ` + send
	b, _ := json.Marshal(map[string]string{"command": cmd})
	res := call(t, w.s, "shell", string(b))
	for _, want := range []string{"hello from a.test", "greeting 0500", "[exit 0]"} {
		if !strings.Contains(res.Output.Content, want) {
			t.Fatalf("class %s, output %q lacks %q", res.Class, res.Output.Content, want)
		}
	}
	var spliced, buffered int
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "egress connection handed over") {
			switch {
			case strings.Contains(line, "spliced=true"):
				spliced++
			case strings.Contains(line, "spliced=false"):
				buffered++
			}
		}
	}
	if spliced != 1 || buffered != 1 {
		t.Errorf("%d handoffs spliced and %d buffered, want 1 each (curl's through the forwarder, the payload's own):\n%s", spliced, buffered, logs.String())
	}
}

// lockedLog is a log sink the proxies' goroutines write to at once.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A burst of connections to the forwarder — more than its descriptors allow
// (600, each one a socket from the sandbox and one to the proxy, against
// the sandbox's RLIMIT_NOFILE of 1024) — costs only those connections: once
// they close, a curl through the proxy works again.
func TestForwarderSurvivesABurst(t *testing.T) {
	w := newEgressWorld(t, sandboxtest.Native(t))
	burst := `python3 -c '
import socket, time
socks = [socket.create_connection(("127.0.0.1", 3128)) for _ in range(600)]
time.sleep(1)  # the forwarder takes them, and runs out of descriptors
for s in socks:
    s.close()
print("burst done")
'`
	cmd := burst + ` && curl -sS --max-time 20 --cacert "$SSL_CERT_FILE" ` + w.a.URL("/ok")
	b, _ := json.Marshal(map[string]string{"command": cmd})
	res := call(t, w.s, "shell", string(b))
	for _, want := range []string{"burst done\n", "hello from a.test\n", "[exit 0]"} {
		if !strings.Contains(res.Output.Content, want) {
			t.Errorf("class %s, output %q lacks %q", res.Class, res.Output.Content, want)
		}
	}
}

// Without a sandbox, http_fetch still goes through the proxy, by its socket.
func TestHTTPFetchUnsandboxed(t *testing.T) {
	w := newEgressWorld(t, sandboxtest.Unsandboxed(t))
	for _, tt := range []struct{ url, want string }{
		{w.a.URL("/ok"), "hello from a.test\n[http 200]"},
		{w.a.URL("/redirect?to=" + w.b.URL("/ok")), w.b.HostPort() + " is not in the grant's network.hosts"},
	} {
		res := call(t, w.s, "http_fetch", fmt.Sprintf(`{"url":%q}`, tt.url))
		if !strings.Contains(res.Output.Content, tt.want) {
			t.Errorf("%s: content %q lacks %q", tt.url, res.Output.Content, tt.want)
		}
		if len(w.egressRecords(t, res.CallID)) == 0 {
			t.Errorf("%s: no egress record", tt.url)
		}
	}
	if n := w.b.Accepts(); n != 0 {
		t.Errorf("b.test saw %d connections", n)
	}
}

// TestEgressRecordsBounded: a sandbox that opens connections as fast as it
// can, each refused, cannot fill the records' disk: past the first
// decisions each gets no record of its own but is counted into one that
// stands for every decision alike, and every decision is accounted for.
func TestEgressRecordsBounded(t *testing.T) {
	w := newEgressWorld(t, sandboxtest.Native(t))
	flood := `python3 -c '
import socket
def connect(host):
    s = socket.create_connection(("127.0.0.1", 3128))
    s.sendall(("CONNECT %s:443 HTTP/1.1\r\nHost: %s:443\r\n\r\n" % (host, host)).encode())
    s.recv(4096)
    s.close()
for i in range(500):
    connect("b.test")
for i in range(1000):
    connect("h%d.flood.test" % i)
print("flood done")
'`
	b, _ := json.Marshal(map[string]string{"command": flood})
	res := call(t, w.s, "shell", string(b))
	if !strings.Contains(res.Output.Content, "flood done") {
		t.Fatalf("the flood did not run: %s %q", res.Class, res.Output.Content)
	}
	recs := w.egressRecords(t, res.CallID)
	total, bTest, others := 0, 0, 0
	for _, r := range recs {
		n := max(r.Count, 1)
		total += n
		if r.Decision != "refused" {
			t.Errorf("an allowed record: %+v", r)
		}
		switch {
		case r.Host == "b.test" && r.Count > 0:
			bTest = r.Count
		case r.Host == "" && r.Count > 0:
			others = r.Count
			if !strings.Contains(r.Reason, "past the first 64") || r.Until.Before(r.Time) {
				t.Errorf("the record of the other hosts: %+v", r)
			}
		}
	}
	if total != 1500 {
		t.Errorf("the records account for %d decisions, want 1500", total)
	}
	// The singles, then for each kind (64, and one for every other host)
	// its first decision on its own and a record counting the rest.
	if len(recs) > 256+2*(64+1) {
		t.Errorf("%d egress records for one call, want at most %d", len(recs), 256+2*(64+1))
	}
	if bTest != 500-256-1 || others != 1000-63-1 {
		t.Errorf("counted records: b.test %d (want %d), other hosts %d (want %d)", bTest, 500-256-1, others, 1000-63-1)
	}
}
