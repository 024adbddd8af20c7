package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/egresstest"
	"github.com/airlockhq/airlock/wire"
)

const testSecret = "s3cr3t-token-value-42"

// fetchWorld is a real egress proxy enforcing a real grant, with loopback
// fixtures behind names only the test resolver knows.
type fetchWorld struct {
	a, b, c, d, p *egresstest.Server
	stall         *egresstest.Staller // sends headers, then nothing
	sentinel      int
	sentinelHits  func() int
	env           Env
	res           *egresstest.Resolver
	mu            sync.Mutex
	decisions     []egress.Decision
}

func newFetchWorld(t *testing.T) *fetchWorld {
	t.Helper()
	ca := egresstest.NewCA(t, "a.test", "b.test", "c.test", "d.test", "s.test", "a.test.evil.test")
	w := &fetchWorld{
		a: egresstest.Serve(t, ca, "a.test", nil),
		b: egresstest.Serve(t, ca, "b.test", nil),
		c: egresstest.Serve(t, ca, "c.test", nil),
		d: egresstest.Serve(t, ca, "d.test", nil),
		p: egresstest.Serve(t, nil, "p.test", nil),

		stall: egresstest.Stall(t, ca, "s.test"),
	}
	w.sentinel, w.sentinelHits = egresstest.Sentinel(t)
	toml := fmt.Sprintf(`
[paths]
read_only = ["."]
[network]
hosts = [%[1]q, %[2]q, %[3]q, %[4]q, %[5]q]
private = [%[1]q, %[3]q, %[4]q, %[5]q]
plain_http = [%[4]q]
[secrets.TOKEN]
from = "env:TOKEN"
tools = ["http_fetch"]
hosts = [%[1]q, %[3]q]
header = "Authorization"
format = "Bearer {value}"
`, w.a.HostPort(), w.c.HostPort(), w.d.HostPort(), w.p.HostPort(), w.stall.HostPort())
	g, err := grant.Parse([]byte(toml), "fetch.toml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	w.res = egresstest.NewResolver("a.test", "b.test", "c.test", "d.test", "p.test", "s.test", "a.test.evil.test")
	w.env = Env{
		Root:    "/",
		Cwd:     "/",
		Secrets: map[string]string{"TOKEN": testSecret},
		Egress: serveEgress(t, ca, g, egress.Options{
			Resolver: w.res,
			OnDecision: func(d egress.Decision) {
				w.mu.Lock()
				w.decisions = append(w.decisions, d)
				w.mu.Unlock()
			},
		}),
	}
	return w
}

func (w *fetchWorld) fetch(t *testing.T, args map[string]string) wire.ToolOutput {
	t.Helper()
	raw, _ := json.Marshal(args)
	def, _ := Lookup("http_fetch")
	a, err := def.Parse(raw)
	if err != nil {
		t.Fatalf("Parse(%s): %v", raw, err)
	}
	return def.Run(context.Background(), w.env, a)
}

func TestHTTPFetch(t *testing.T) {
	w := newFetchWorld(t)
	redirect := func(from *egresstest.Server, to string) string { return from.URL("/redirect?to=" + to) }
	tests := []struct {
		name    string
		url     string
		method  string
		isError bool
		want    []string // substrings of Content
		not     []string // must not appear
	}{
		{name: "allowed host", url: w.a.URL("/ok"), want: []string{"hello from a.test\n[http 200]"}},
		{name: "not granted", url: w.b.URL("/ok"), isError: true,
			want: []string{"refused by the egress proxy: " + w.b.HostPort() + " is not in the grant's network.hosts"}},
		{name: "redirect to a host not granted", url: redirect(w.a, w.b.URL("/ok")), isError: true,
			want: []string{"refused by the egress proxy: redirect 1", w.b.HostPort() + " is not in the grant's network.hosts"},
			not:  []string{"SECRET-BODY"}},
		{name: "redirect to a look-alike host", url: redirect(w.a, fmt.Sprintf("https://a.test.evil.test:%d/ok", w.a.Port)), isError: true,
			want: []string{"is not in the grant's network.hosts"}},
		{name: "redirect to the metadata address over http", url: redirect(w.a, "http://169.254.169.254/latest/meta-data/"), isError: true,
			want: []string{"a redirect from https down to http is never followed"}},
		{name: "redirect to the metadata address over https", url: redirect(w.a, "https://169.254.169.254/latest/meta-data/"), isError: true,
			want: []string{"169.254.169.254:443 is not in the grant's network.hosts"}},
		{name: "redirect to the sentinel", url: redirect(w.a, fmt.Sprintf("https://127.0.0.1:%d/", w.sentinel)), isError: true,
			want: []string{"is not in the grant's network.hosts"}},
		{name: "redirect to the sentinel as a decimal address", url: redirect(w.a, fmt.Sprintf("https://2130706433:%d/", w.sentinel)), isError: true,
			want: []string{"refused"}},
		{name: "granted name with a loopback address", url: w.c.URL("/ok"), isError: true,
			want: []string{"resolves to an address that is not public"}},
		{name: "redirect to file", url: redirect(w.a, "file:///etc/passwd"), isError: true,
			want: []string{`the scheme "file" is not fetched`}},
		{name: "redirect to gopher", url: redirect(w.a, fmt.Sprintf("gopher://127.0.0.1:%d/", w.sentinel)), isError: true,
			want: []string{`the scheme "gopher" is not fetched`}},
		{name: "downgrade to granted plain http", url: redirect(w.a, w.p.URL("/ok")), isError: true,
			want: []string{"a redirect from https down to http is never followed"}},
		{name: "plain http where granted", url: w.p.URL("/ok"), want: []string{"hello from p.test\n[http 200]"}},
		{name: "plain http not granted", url: fmt.Sprintf("http://a.test:%d/ok", w.a.Port), isError: true,
			want: []string{"network.plain_http does not list it"}},
		{name: "redirect loop", url: w.a.URL("/loop/0"), isError: true,
			want: []string{"stopped after 5 redirects"}},
		{name: "secret to its own host", url: w.a.URL("/auth"), want: []string{"authorization present: true"}},
		{name: "secret kept on a same-origin redirect", url: redirect(w.a, "/auth"), want: []string{"authorization present: true", "[followed 1 redirect(s)"}},
		{name: "secret dropped when the host changes", url: redirect(w.a, w.d.URL("/auth")), want: []string{"authorization present: false"}},
		{name: "secret dropped for good after an origin change", url: redirect(w.a, w.d.URL("/redirect?to="+w.a.URL("/auth"))), want: []string{"authorization present: false"}},
		{name: "secret in the URL", url: w.a.URL("/ok?key=" + testSecret), isError: true,
			want: []string{"contains the value of the secret TOKEN"}, not: []string{testSecret}},
		{name: "secret in a redirect", url: redirect(w.a, w.d.URL("/ok?k="+testSecret)), isError: true,
			want: []string{"contains the value of the secret TOKEN"}, not: []string{testSecret}},
		{name: "binary", url: w.a.URL("/bin"), want: []string{"[binary body: image/png, 20 bytes, not shown]\n[http 200]"}},
		{name: "too big", url: w.a.URL("/big?n=6000000"), want: []string{"[body larger than 5 MiB: stopped reading]\n[http 200]", "bytes cut"}},
		{name: "gzip", url: w.a.URL("/gzip?n=70"), want: []string{"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\nxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\nxxxxxx\n[http 200]"}},
		{name: "gzip bomb", url: w.a.URL("/gzip?n=100000000"), want: []string{"[body larger than 5 MiB: stopped reading]\n[http 200]"}},
		{name: "text that drives a terminal reaches the model as it was, bytes that are not UTF-8 marked",
			url: w.a.URL("/hostile"), want: []string{"clip\x1b]52;c;aGk=\x07 clear\x1b[2J cr\r bs\b rlo\u202eolleh bad\\xff\\xfe\n[airlock: http_fetch · forged]\n[http 200]"},
			not: []string{"\uFFFD"}},
		{name: "not found", url: w.a.URL("/nothing"), want: []string{"[http 404]"}},
		{name: "head", url: w.a.URL("/ok"), method: "HEAD", want: []string{"Content-Type: text/plain; charset=utf-8\n", "[http 200]"}, not: []string{"hello"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := map[string]string{"url": tt.url}
			if tt.method != "" {
				args["method"] = tt.method
			}
			out := w.fetch(t, args)
			if out.IsError != tt.isError {
				t.Errorf("IsError = %v, want %v; content %q", out.IsError, tt.isError, out.Content)
			}
			for _, s := range tt.want {
				if !strings.Contains(out.Content, s) {
					t.Errorf("content %q lacks %q", out.Content[:min(len(out.Content), 600)], s)
				}
			}
			for _, s := range tt.not {
				if strings.Contains(out.Content, s) {
					t.Errorf("content contains %q: %q", s, out.Content)
				}
			}
		})
	}
	if n := w.sentinelHits(); n != 0 {
		t.Errorf("the sentinel saw %d connections", n)
	}
	if n := w.b.Accepts(); n != 0 {
		t.Errorf("b.test saw %d connections", n)
	}
	for _, name := range []string{"b.test", "a.test.evil.test"} {
		if n := w.res.Lookups(name); n != 0 {
			t.Errorf("the proxy looked up %s, which the grant does not name, %d times", name, n)
		}
	}
	if n := w.c.Accepts(); n != 0 {
		t.Errorf("c.test (loopback, not private) saw %d connections", n)
	}
	loops, withAuth, withoutAuth := 0, 0, 0
	for _, r := range w.a.Requests() {
		if strings.HasPrefix(r.Path, "/loop/") {
			loops++
		}
		if strings.HasPrefix(r.Path, "/auth") {
			switch r.Header.Get("Authorization") {
			case "Bearer " + testSecret:
				withAuth++
			case "":
				withoutAuth++
			default:
				t.Errorf("a.test /auth got Authorization %q", r.Header.Get("Authorization"))
			}
		}
	}
	// Two fetches of a.test/auth straight or by a same-origin redirect carry
	// the secret; the one that came back to a.test by way of d.test does not.
	if withAuth != 2 || withoutAuth != 1 {
		t.Errorf("a.test /auth: %d with the secret, %d without; want 2 and 1", withAuth, withoutAuth)
	}
	if loops != 6 {
		t.Errorf("a.test saw %d loop requests, want 6 (the first and 5 redirects)", loops)
	}
	for _, srv := range []*egresstest.Server{w.d, w.p} {
		for _, r := range srv.Requests() {
			for _, h := range []string{"Authorization", "Cookie", "Proxy-Authorization"} {
				if v := r.Header.Get(h); v != "" {
					t.Errorf("%s %s got %s %q", srv.Name, r.Path, h, v)
				}
			}
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var allowed, denied int
	for _, d := range w.decisions {
		if d.Allowed {
			allowed++
		} else {
			denied++
		}
	}
	if allowed == 0 || denied == 0 {
		t.Errorf("decisions: %d allowed, %d denied; want some of each", allowed, denied)
	}
}

func TestHTTPFetchCaps(t *testing.T) {
	w := newFetchWorld(t)
	out := w.fetch(t, map[string]string{"url": w.a.URL("/huge-header")})
	if !out.IsError || !strings.Contains(out.Content, "headers passed 64 KiB") || strings.Contains(out.Content, "body after") {
		t.Errorf("huge header: %+v", out)
	}
	w.env.Limits.TimeoutMS = 2500
	out = w.fetch(t, map[string]string{"url": w.a.URL("/slow")})
	if !out.IsError || !strings.Contains(out.Content, "ran past its time limit of 1.5s") {
		t.Errorf("slow: %+v", out)
	}
}

// An upstream that sends headers and then stalls is a time-limit result,
// never a body that merely "ended early", and the fetch lets go of it.
func TestHTTPFetchStalledBody(t *testing.T) {
	w := newFetchWorld(t)
	w.env.Limits.TimeoutMS = 2500
	out := w.fetch(t, map[string]string{"url": w.stall.URL("/stall")})
	want := "the fetch ran past its time limit of 1.5s while reading the body from " + w.stall.HostPort() + " ([http 200]"
	if !out.IsError || !strings.Contains(out.Content, want) {
		t.Errorf("got %+v, want an error containing %q", out, want)
	}
	select {
	case <-w.stall.Closed():
	case <-time.After(30 * time.Second):
		t.Fatal("the stalled upstream's connection is still open after the fetch returned")
	}
}

func TestHTTPFetchWithoutProxy(t *testing.T) {
	def, _ := Lookup("http_fetch")
	a, err := def.Parse(json.RawMessage(`{"url":"https://example.com/"}`))
	if err != nil {
		t.Fatal(err)
	}
	out := def.Run(context.Background(), Env{Root: "/", Cwd: "/"}, a)
	if !out.IsError || !strings.Contains(out.Content, "no egress proxy") {
		t.Errorf("got %+v", out)
	}
}

func TestHTTPFetchArgs(t *testing.T) {
	tests := []struct {
		args string
		err  string // "" means valid
	}{
		{`{"url":"https://a.test/x"}`, ""},
		{`{"url":"http://a.test/x","method":"HEAD"}`, ""},
		{`{"url":"https://a.test/x","method":"POST"}`, `must be GET or HEAD, got "POST"`},
		{`{"url":"ftp://a.test/x"}`, `the scheme "ftp" is not fetched`},
		{`{"url":"file:///etc/passwd"}`, `the scheme "file" is not fetched`},
		{`{"url":"a.test/x"}`, "not an absolute URL"},
		{`{"url":"https://user:pw@a.test/"}`, "credentials never go in a URL"},
		{`{"url":"https://a.test:0/"}`, `the port "0" is not in 1..65535`},
		{`{"url":"https://a.test:65536/"}`, `not in 1..65535`},
		{`{"url":"https://[fe80::1%25lo]/"}`, "zone"},
		{`{"url":"https://127.1/"}`, "numeric IP address"},
		{`{"url":"https://0x7f000001/"}`, "numeric IP address"},
		{`{"url":"https://a.test.0x1f/"}`, "numeric IP address"},
		{`{"url":"https://under_score.test/"}`, "not a valid host name"},
		{`{"url":"https://a..test/"}`, "empty"},
		{`{"url":"https://bücher.test/"}`, "xn-- form"},
		{`{"url":"https://a.test/\nx"}`, "control characters"},
		{`{"url":"https://a.test/","headers":{}}`, "headers"},
		{`{}`, "url"},
	}
	def, _ := Lookup("http_fetch")
	for _, tt := range tests {
		t.Run(tt.args, func(t *testing.T) {
			_, err := def.Parse(json.RawMessage(tt.args))
			switch {
			case tt.err == "" && err != nil:
				t.Errorf("unexpected error %v", err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Errorf("error %v, want one containing %q", err, tt.err)
			}
		})
	}
}

func TestHostMatches(t *testing.T) {
	tests := []struct {
		pattern, host string
		port          int
		want          bool
	}{
		{"a.test", "a.test", 443, true},
		{"a.test", "a.test", 80, true},
		{"a.test", "a.test", 8443, false},
		{"a.test:8443", "a.test", 8443, true},
		{"a.test:8443", "a.test", 443, false},
		{"a.test", "b.a.test", 443, false},
		{"*.a.test", "b.a.test", 443, true},
		{"*.a.test", "c.b.a.test", 443, true},
		{"*.a.test", "a.test", 443, false},
		{"*.a.test", "evila.test", 443, false},
		{"a.test", "a.test.evil.test", 443, false},
		{"192.0.2.1", "192.0.2.1", 443, true},
		{"192.0.2.1:8080", "192.0.2.1", 8080, true},
		{"[2001:db8::1]", "2001:db8::1", 443, true},
		{"[2001:db8::1]:8443", "2001:db8::1", 8443, true},
		{"[2001:db8::1]:8443", "2001:db8::1", 443, false},
		{"192.0.2.1", "[192.0.2.1]", 443, false},
		{"a.test", "A.Test.", 443, true},
		{"a.test", "a.test:443", 443, false},
		{"*.a.test", "b.a.test.0x1f", 443, false},
		{"127.0.0.1", "127.1", 443, false},
		{"not a pattern", "not a pattern", 443, false},
	}
	for _, tt := range tests {
		if got := hostMatches(tt.pattern, tt.host, tt.port); got != tt.want {
			t.Errorf("hostMatches(%q, %q, %d) = %v, want %v", tt.pattern, tt.host, tt.port, got, tt.want)
		}
	}
}

// serveEgress serves a real egress proxy enforcing g (with o's other
// options) on loopback until the test ends, makes the tools trust ca
// meanwhile, and returns what a tool needs to reach the network through it.
func serveEgress(t *testing.T, ca *egresstest.CA, g *grant.Grant, o egress.Options) *wire.Egress {
	t.Helper()
	o.Policy = g
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := egress.New(&o)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.Serve(ctx, l) }()
	t.Cleanup(func() { cancel(); <-done })
	old := fetchRootCAs
	fetchRootCAs = ca.Pool()
	t.Cleanup(func() { fetchRootCAs = old })
	var uses []wire.SecretUse
	for _, r := range g.Secrets() {
		uses = append(uses, wire.SecretUse{Name: r.Name, Header: r.Header, Format: r.Format, Hosts: r.Hosts})
	}
	return &wire.Egress{Proxy: "http://" + l.Addr().String(), PlainHTTP: g.PlainHTTPHosts(), Secrets: uses}
}

// A server that echoes the secret a request carried never shows it to the
// model, whole or cut: the model can place the output cap's cut (or the
// body's) anywhere in the echo by padding, and the part before the cut was
// shown before (red team). Every offset around the secret is tried, in the
// value's own form and JSON-escaped.
func TestHTTPFetchEchoedSecretCut(t *testing.T) {
	w := newFetchWorld(t)
	w.env.Limits.OutputBytes = 4096
	secretAt := 4096 - len("auth=Bearer ")
	for _, form := range []string{"", "&json=1"} {
		for pad := secretAt - len(testSecret) - 2; pad <= secretAt+2; pad++ {
			out := w.fetch(t, map[string]string{"url": w.a.URL(fmt.Sprintf("/echo-auth?pad=%d%s", pad, form))})
			if out.IsError {
				t.Fatalf("pad %d: %s", pad, out.Content)
			}
			body, _, _ := strings.Cut(out.Content, "\n[... ")
			body = strings.TrimLeft(body, "A")
			for k := 4; k <= len(testSecret); k++ {
				if strings.Contains(body, testSecret[:k]) {
					t.Errorf("pad %d%s: %d bytes of the secret shown: %q", pad, form, k, body)
					break
				}
			}
		}
	}
	out := w.fetch(t, map[string]string{"url": w.a.URL("/echo-auth?pad=10")})
	if !strings.Contains(out.Content, "auth=Bearer [secret TOKEN]\n") {
		t.Errorf("a whole echo: %q, want it redacted", out.Content)
	}
}

// Where a text is cut, what the model reads of its end must not depend on
// whether it begins a secret: a server that reflects what the URL asks for
// lets the model end the shown text with a guess of its own, and an answer
// that told a right guess from a wrong one (a label for a prefix of the
// secret) would give the secret away a byte at a time (red team). Here
// the body holds no secret at all.
func TestHTTPFetchCutIsNoOracle(t *testing.T) {
	w := newFetchWorld(t)
	w.env.Limits.OutputBytes = 1024
	for _, k := range []int{1, 4, len(testSecret) - 1} {
		right, wrong := testSecret[:k], strings.Repeat("~", k)
		show := func(guess string) string {
			out := w.fetch(t, map[string]string{"url": w.a.URL(fmt.Sprintf("/echo?pad=%d&text=%s%s", 1024-k, guess, strings.Repeat("z", 64)))})
			if out.IsError {
				t.Fatalf("%s", out.Content)
			}
			return out.Content
		}
		if r, wr := show(right), show(wrong); r != wr {
			t.Errorf("a cut after %d bytes of the secret reads differently from one after %d other bytes:\n%q\n%q", k, k, r[max(0, len(r)-80):], wr[max(0, len(wr)-80):])
		}
	}
}

// TestHTTPFetchClippedEchoHidesSecret checks that where http_fetch clips
// text the server chose (a binary body's Content-Type, the headers a HEAD
// shows) to 200 bytes, a secret echoed across the clip shows none of its
// bytes: the text is redacted before it is clipped, not after, when only
// the secret's start would be left to match nothing.
func TestHTTPFetchClippedEchoHidesSecret(t *testing.T) {
	w := newFetchWorld(t)
	for _, method := range []string{"GET", "HEAD"} {
		for _, pad := range []int{170, 180, 190} {
			args := map[string]string{"url": w.a.URL(fmt.Sprintf("/auth-in-type?pad=%d", pad))}
			if method == "HEAD" {
				args["method"] = "HEAD"
			}
			out := w.fetch(t, args)
			if strings.Contains(out.Content, testSecret[:6]) {
				t.Errorf("%s, pad %d: the clipped Content-Type shows the secret's start:\n%s", method, pad, out.Content)
			}
		}
	}
}

// A server may echo the secret a request carried spelled as its own
// encoder writes it, not only as Go, JavaScript, Python or PHP would: .NET's
// JSON writer spells "+" as \u002B, its URL encoder uses lower-case hex, Go's
// html/template writes "+" as &#43;. Each of those is the secret for anyone
// who reads it, so none may reach the model (red team: a token of the
// base64 alphabet, as AWS keys are, echoed by such a server was shown).
func TestHTTPFetchEchoInAnyEncoderSpelling(t *testing.T) {
	const value = "tok+5ecret/Value=42"
	w := newFetchWorld(t)
	w.env.Secrets = map[string]string{"TOKEN": value}
	for name, enc := range egresstest.EchoEncoders {
		spelled := enc("Bearer " + value)
		out := w.fetch(t, map[string]string{"url": w.a.URL("/echo-auth?pad=1&enc=" + name)})
		if out.IsError {
			t.Fatalf("%s: %s", name, out.Content)
		}
		if strings.Contains(out.Content, spelled[len(enc("Bearer ")):]) || !strings.Contains(out.Content, "[secret TOKEN]") {
			t.Errorf("%s: the echo %q reads %q, want the secret redacted", name, spelled, out.Content)
		}
	}
}

// A secret goes only over TLS: a grant that lets a host be fetched over
// plain http too (network.plain_http) and names it among a secret's hosts
// let the model pick http:// and have the secret cross the network in
// clear text, readable by every hop on the way (red team). The fetch
// still runs, without the secret.
func TestHTTPFetchSecretNeverInClearText(t *testing.T) {
	p := egresstest.Serve(t, nil, "p.test", nil)
	ca := egresstest.NewCA(t, "p.test")
	g, err := grant.Parse(fmt.Appendf(nil, `
[paths]
read_only = ["."]
[network]
hosts = [%[1]q]
private = [%[1]q]
plain_http = [%[1]q]
[secrets.TOKEN]
from = "env:TOKEN"
tools = ["http_fetch"]
hosts = [%[1]q]
`, p.HostPort()), "plain.toml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	env := Env{Root: "/", Cwd: "/", Secrets: map[string]string{"TOKEN": testSecret},
		Egress: serveEgress(t, ca, g, egress.Options{Resolver: egresstest.NewResolver("p.test")})}
	def, _ := Lookup("http_fetch")
	a, err := def.Parse([]byte(`{"url":"` + p.URL("/auth") + `"}`))
	if err != nil {
		t.Fatal(err)
	}
	out := def.Run(context.Background(), env, a)
	if out.IsError || !strings.Contains(out.Content, "authorization present: false") {
		t.Errorf("a plain-http fetch of a secret's host: %q, want it fetched without the secret", out.Content)
	}
	for _, r := range p.Requests() {
		if v := r.Header.Get("Authorization"); v != "" {
			t.Errorf("the secret went over plain http: Authorization %q", v)
		}
	}
}

// Where a text is cut, how much is dropped must not tell the secret's
// length: the model reads the end of the text it placed at the cut, and
// the "[... N bytes cut ...]" note, so a drop that grew with the value
// gave its length away (red team). Secrets of 8, 21 and 60 bytes drop the
// same; the body holds none of them.
func TestHTTPFetchCutTellsNoLength(t *testing.T) {
	w := newFetchWorld(t)
	w.env.Limits.OutputBytes = 4096
	var first string
	for _, v := range []string{"8-bytes!", testSecret, strings.Repeat("sixty-bytes.", 5)} {
		w.env.Secrets = map[string]string{"TOKEN": v}
		out := w.fetch(t, map[string]string{"url": w.a.URL("/echo?pad=8000&text=end")})
		if out.IsError {
			t.Fatalf("%s", out.Content)
		}
		if first == "" {
			first = out.Content
		} else if out.Content != first {
			t.Errorf("a %d-byte secret: the cut reads %q, a %d-byte one %q", len(v), out.Content[max(0, len(out.Content)-60):], 8, first[max(0, len(first)-60):])
		}
	}
}

// A secret a request carries must not be compressed next to text the model
// chose: a server that reflects both in one gzip-encoded body (an echo
// endpoint, an error page quoting the request) makes the body shorter the
// more of the secret the model's text repeats, and HEAD shows the
// Content-Length of that body, so the model learns the secret by guessing
// it a few bytes at a time (BREACH; red team). Here a guess of all but the
// secret's last byte must read as a wrong guess of the same length does.
func TestHTTPFetchNoCompressionOracle(t *testing.T) {
	w := newFetchWorld(t)
	for _, always := range []string{"", "&always=1"} {
		show := func(guess string) string {
			out := w.fetch(t, map[string]string{"method": "HEAD", "url": w.a.URL("/echo-auth-gz?text=Bearer+" + guess + always)})
			if out.IsError {
				t.Fatalf("%s", out.Content)
			}
			return out.Content
		}
		right := testSecret[:len(testSecret)-1]
		wrong := strings.Repeat("Q", len(right))
		if r, wr := show(right), show(wrong); r != wr {
			t.Errorf("%s: HEAD of a body that reflects the secret and the model's text reads differently for a right guess and a wrong one:\nright: %q\nwrong: %q", always, r, wr)
		}
	}
	// A request without a secret (plain http here) still asks for gzip.
	out := w.fetch(t, map[string]string{"method": "HEAD", "url": w.p.URL("/echo-auth-gz?text=x")})
	if !strings.Contains(out.Content, "Content-Encoding: gzip") {
		t.Errorf("HEAD without a secret: %q, want it compressed", out.Content)
	}
}

// Where a redirect's Location is refused as no fetchable URL, the refusal
// quotes it clipped to 200 bytes: the Location is the server's text and may
// reflect the secret the request carried, and a clip made before the
// secret was redacted left its start, all of it but the bytes past the
// clip, which the model chooses by padding (red team). No offset may show
// any of it.
func TestHTTPFetchRefusedLocationHidesSecret(t *testing.T) {
	w := newFetchWorld(t)
	for pad := 150; pad <= 200; pad++ {
		out := w.fetch(t, map[string]string{"url": w.a.URL(fmt.Sprintf("/auth-in-location?pad=%d", pad))})
		if !out.IsError {
			t.Fatalf("pad %d: %q, want a refused redirect", pad, out.Content)
		}
		if i := strings.Index(out.Content, testSecret[:4]); i >= 0 {
			t.Errorf("pad %d: the refusal shows the secret's start: %q", pad, out.Content[i:])
		}
	}
}

// A server may echo the secret a request carried in a form no escape
// spells: upper-cased (an error page that shouts what it quotes), in
// base64 or hex (a debug endpoint that dumps the request's bytes). The
// secret is there for anyone who decodes it, so none of it may reach the
// model (red team: each was shown).
func TestHTTPFetchEchoEncodedOrCaseChanged(t *testing.T) {
	const value = "tok-5ecret-Value-42x"
	w := newFetchWorld(t)
	w.env.Secrets = map[string]string{"TOKEN": value}
	// The part of each echo that comes from the value alone.
	b64 := egresstest.EchoEncoders["base64"]("Bearer " + value)
	pure := map[string]string{
		"upper": strings.ToUpper(value),
		// "Bearer " is 7 bytes: characters 10.. hold the value's bits alone,
		// up to the last one that holds none of the padding's.
		"base64": b64[10 : (7+len(value))*8/6],
		"hex":    egresstest.EchoEncoders["hex"](value),
	}
	for name, spelled := range pure {
		out := w.fetch(t, map[string]string{"url": w.a.URL("/echo-auth?pad=1&enc=" + name)})
		if out.IsError {
			t.Fatalf("%s: %s", name, out.Content)
		}
		for k := 0; k+8 <= len(spelled); k++ {
			if strings.Contains(out.Content, spelled[k:k+8]) {
				t.Errorf("%s: the echo shows %q of the secret's %q: %q", name, spelled[k:k+8], spelled, out.Content)
				break
			}
		}
	}
}

// A redirect that carries the secret in its URL is never followed, in any
// form the secret could be read back from: a secret's host that hands what
// it was sent on to a URL the model chose (an open redirect that adds it
// to the query) would send it to another host the grant allows, one the
// model may read. Plain and percent-encoded it was refused; upper-cased, in
// base64 or hex it went (red team).
func TestHTTPFetchRedirectCarriesNoEncodedSecret(t *testing.T) {
	ca := egresstest.NewCA(t, "a.test", "e.test")
	a := egresstest.Serve(t, ca, "a.test", nil)
	e := egresstest.Serve(t, ca, "e.test", nil)
	g, err := grant.Parse(fmt.Appendf(nil, `
[paths]
read_only = ["."]
[network]
hosts = [%[1]q, %[2]q]
private = [%[1]q, %[2]q]
[secrets.TOKEN]
from = "env:TOKEN"
tools = ["http_fetch"]
hosts = [%[1]q]
`, a.HostPort(), e.HostPort()), "open-redirect.toml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	env := Env{Root: "/", Cwd: "/", Secrets: map[string]string{"TOKEN": testSecret},
		Egress: serveEgress(t, ca, g, egress.Options{Resolver: egresstest.NewResolver("a.test", "e.test")})}
	def, _ := Lookup("http_fetch")
	for _, enc := range []string{"", "upper", "base64", "hex", "dotnet-url"} {
		raw, _ := json.Marshal(map[string]string{"url": a.URL("/redirect-auth?enc=" + enc + "&to=" + url.QueryEscape(e.URL("/ok")))})
		args, err := def.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		out := def.Run(context.Background(), env, args)
		if !out.IsError || !strings.Contains(out.Content, "contains the value of the secret TOKEN") {
			t.Errorf("enc %q: %q, want the redirect refused for the secret it carries", enc, out.Content)
		}
	}
	if reqs := e.Requests(); len(reqs) > 0 {
		t.Errorf("the secret went to another host in %d redirect(s), the first to %s", len(reqs), reqs[0].Path)
	}
}
