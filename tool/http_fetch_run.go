package tool

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/airlockhq/airlock/internal/redact"
	"github.com/airlockhq/airlock/wire"
)

// Limits of one http_fetch call.
const (
	fetchMaxRedirects  = 5
	fetchMaxBody       = 5 << 20 // decoded, and raw (compressed) alike
	fetchMaxHeader     = 64 << 10
	fetchTimeout       = 30 * time.Second
	fetchTimeoutMargin = time.Second // left for the answer within the call's own limit
)

// fetchRootCAs replaces the system's roots in tests; nil means the system's
// (which honour SSL_CERT_FILE and SSL_CERT_DIR).
var fetchRootCAs *x509.CertPool

// fetcher runs one http_fetch: every hop is a fresh CONNECT tunnel through
// the egress proxy (so every hop is the proxy's decision and is audited),
// with plain HTTP or TLS inside it.
type fetcher struct {
	env       Env
	proxyNet  string // "tcp" (the in-sandbox forwarder) or "unix" (the socket)
	proxyAddr string
	client    *http.Client
	red       *redact.Redactor // the call's secrets, as "[secret NAME]"
}

func runHTTPFetch(ctx context.Context, env Env, a HTTPFetchArgs) wire.ToolOutput {
	eg := env.Egress
	if eg == nil || eg.Proxy == "" {
		return Failure("http_fetch cannot reach the network: the grant names no hosts, so this sandbox has no egress proxy")
	}
	network, addr, ok := proxyAddr(eg.Proxy)
	if !ok {
		return Failure("http_fetch cannot reach the network: the egress proxy address is not usable")
	}
	t, err := checkFetchURL(a.URL)
	if err != nil {
		return Failure("refused: %v", err)
	}
	method := a.Method
	if method == "" {
		method = http.MethodGet
	}
	timeout := fetchTimeout
	if ms := env.Limits.TimeoutMS; ms > 0 {
		timeout = min(timeout, max(time.Duration(ms)*time.Millisecond-fetchTimeoutMargin, time.Second))
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	f := newFetcher(env, network, addr)
	out := f.fetch(ctx, method, t, timeout)
	out.Content = f.red.String(out.Content)
	return out
}

// newFetcher returns a fetcher whose client reaches every host through the
// egress proxy at network/addr, one CONNECT tunnel a request, never
// following a redirect by itself.
func newFetcher(env Env, network, addr string) *fetcher {
	f := &fetcher{env: env, proxyNet: network, proxyAddr: addr, red: secretRedactor(env.Secrets)}
	f.client = &http.Client{
		Transport: &http.Transport{
			DialContext:            f.dialViaProxy,
			TLSClientConfig:        &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: fetchRootCAs},
			TLSHandshakeTimeout:    10 * time.Second,
			DisableKeepAlives:      true,
			DisableCompression:     true,
			MaxResponseHeaderBytes: fetchMaxHeader,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return f
}

// fetch follows redirects itself, checking each hop before it is requested.
func (f *fetcher) fetch(ctx context.Context, method string, first fetchTarget, timeout time.Duration) wire.ToolOutput {
	cur, prev := first, fetchTarget{}
	sameOrigin := true // credentials go only while the origin has never changed
	for hop := 0; ; hop++ {
		where := ""
		if hop > 0 {
			where = fmt.Sprintf("redirect %d (from %s to %s): ", hop, prev.origin(), cur.origin())
		}
		if prev.scheme == "https" && cur.scheme == "http" {
			return Failure("refused: %sa redirect from https down to http is never followed", where)
		}
		if cur.scheme == "http" && !anyHostMatches(f.env.Egress.PlainHTTP, cur.host, cur.port) {
			return Failure("refused: %splain http to %s is not allowed: the grant's network.plain_http does not list it; use https", where, cur.hostPort())
		}
		if name := secretInURL(cur.u, f.env.Secrets); name != "" {
			return Failure("refused: %sthe URL contains the value of the secret %s; secrets are sent only in their header", where, name)
		}
		req, err := http.NewRequestWithContext(ctx, method, cur.u.String(), nil)
		if err != nil {
			return Failure("refused: %sthe URL cannot be requested", where)
		}
		req.Header.Set("User-Agent", "airlock-http_fetch/1")
		carried := 0
		if sameOrigin {
			carried = f.addSecrets(req, cur)
		}
		// A secret is never compressed next to text the model chose: a
		// server that reflects both in one compressed body makes it the
		// shorter the more of the secret the model's text repeats, and
		// the model reads a length (HEAD's Content-Length), so it could
		// guess the secret a few bytes at a time (BREACH). A request that
		// carries one asks for no compression.
		if carried == 0 {
			req.Header.Set("Accept-Encoding", "gzip")
		} else {
			req.Header.Set("Accept-Encoding", "identity")
		}
		resp, err := f.client.Do(req)
		if err != nil {
			return f.failure(ctx, where, cur, err, timeout)
		}
		loc := resp.Header.Get("Location")
		if !isRedirect(resp.StatusCode) || loc == "" {
			return f.result(ctx, resp, method, hop, cur, timeout, carried > 0)
		}
		resp.Body.Close() // a redirect's body is never read
		if hop == fetchMaxRedirects {
			return Failure("refused: stopped after %d redirects (the limit); the next was to %s", fetchMaxRedirects, f.clip(loc))
		}
		nu, err := cur.u.Parse(loc)
		if err != nil {
			return Failure("refused: redirect %d from %s: the Location is not a URL", hop+1, cur.origin())
		}
		next, err := checkFetchURLClip(nu.String(), f.clip)
		if err != nil {
			return Failure("refused: redirect %d from %s: %v", hop+1, cur.origin(), err)
		}
		if next.origin() != first.origin() {
			sameOrigin = false
		}
		prev, cur = cur, next
	}
}

// proxyAddr parses wire.Egress.Proxy: "http://host:port" or "unix:/path".
func proxyAddr(s string) (network, addr string, ok bool) {
	if p, ok := strings.CutPrefix(s, "unix:"); ok {
		return "unix", p, strings.HasPrefix(p, "/")
	}
	u, err := url.Parse(s)
	if err != nil || u.Scheme != "http" || u.Host == "" || u.Path != "" && u.Path != "/" {
		return "", "", false
	}
	return "tcp", u.Host, true
}

func isRedirect(code int) bool {
	switch code {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther,
		http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		return true
	}
	return false
}

// addSecrets sets the header of every secret whose hosts include t, and
// reports how many it set. A secret goes over TLS only: on plain http it
// would cross every network on the way in clear text, so an http:// target
// gets none, whatever network.plain_http allows.
func (f *fetcher) addSecrets(req *http.Request, t fetchTarget) int {
	if t.scheme != "https" {
		return 0
	}
	n := 0
	for _, su := range f.env.Egress.Secrets {
		v, ok := f.env.Secrets[su.Name]
		if !ok || !anyHostMatches(su.Hosts, t.host, t.port) || su.Header == "" || !strings.Contains(su.Format, "{value}") {
			continue
		}
		val := strings.Replace(su.Format, "{value}", v, 1)
		if strings.ContainsAny(val, "\r\n\x00") {
			continue
		}
		req.Header.Set(su.Header, val)
		n++
	}
	return n
}

// secretInURL returns the name of a secret whose value appears in u, raw,
// percent-decoded or in any form a redactor finds (another case, hex,
// base64, escaped): a URL goes wherever its host is, and a redirect's may be
// the secret's host handing what it was sent on to a host the model reads.
func secretInURL(u *url.URL, secrets map[string]string) string {
	raw := u.String()
	dec, err := url.QueryUnescape(raw)
	if err != nil {
		dec = raw
	}
	for name, v := range secrets {
		if len(v) < 4 {
			continue
		}
		if strings.Contains(raw, v) || strings.Contains(dec, v) || strings.Contains(u.Path, v) {
			return name
		}
		r := redact.New(map[string]string{name: v})
		if r.String(raw) != raw || r.String(dec) != dec || r.String(u.Path) != u.Path {
			return name
		}
	}
	return ""
}

// redactSecrets replaces secret values in s (a server may echo them), and
// the forms common encoders give them (redact.Redactor).
func redactSecrets(s string, secrets map[string]string) string {
	return secretRedactor(secrets).String(s)
}

// secretRedactor redacts secrets as "[secret NAME]"; nil for none.
func secretRedactor(secrets map[string]string) *redact.Redactor {
	if len(secrets) == 0 {
		return nil
	}
	return redact.NewAs(secrets, func(name string) string { return "[secret " + name + "]" })
}

// proxyRefusal is the egress proxy's answer to a CONNECT it did not allow.
type proxyRefusal struct {
	status int
	reason string // the proxy's one-line category, without its prefix
}

func (e *proxyRefusal) Error() string {
	return fmt.Sprintf("proxy answered %d: %s", e.status, e.reason)
}

// dialViaProxy opens a CONNECT tunnel to addr through the egress proxy.
func (f *fetcher) dialViaProxy(ctx context.Context, _, addr string) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, f.proxyNet, f.proxyAddr)
	if err != nil {
		return nil, fmt.Errorf("reaching the egress proxy: %w", err)
	}
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	if _, err := fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", addr, addr); err != nil {
		c.Close()
		return nil, fmt.Errorf("writing CONNECT: %w", err)
	}
	br := bufio.NewReaderSize(c, 1024)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("reading the proxy's answer: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		c.Close()
		reason := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(b)), "airlock egress:"))
		return nil, &proxyRefusal{status: resp.StatusCode, reason: reason}
	}
	c.SetDeadline(time.Time{})
	if br.Buffered() > 0 {
		return &bufferedConn{Conn: c, r: br}, nil
	}
	return c, nil
}

type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (b *bufferedConn) Read(p []byte) (int, error) { return b.r.Read(p) }

// failure turns a failed request into a sentence the model reads: which
// rule refused it, or what failed, never a response body.
func (f *fetcher) failure(ctx context.Context, where string, t fetchTarget, err error, timeout time.Duration) wire.ToolOutput {
	var pr *proxyRefusal
	var cv *tls.CertificateVerificationError
	var rh *tls.RecordHeaderError
	switch {
	case errors.As(err, &pr):
		return Failure("refused by the egress proxy: %s%s", where, refusalSentence(pr, t))
	case ctx.Err() != nil:
		return Failure("%sthe fetch ran past its time limit of %s", where, timeout)
	case errors.As(err, &cv):
		return Failure("%sthe TLS certificate of %s was not accepted: %v", where, t.hostPort(), cv.Err)
	case errors.As(err, &rh):
		return Failure("%s%s did not answer with TLS", where, t.hostPort())
	case strings.Contains(err.Error(), "reaching the egress proxy"):
		return Failure("%sthe egress proxy could not be reached", where)
	case strings.Contains(err.Error(), "header"):
		return Failure("%sthe response from %s was malformed or its headers passed %d KiB", where, t.hostPort(), fetchMaxHeader>>10)
	}
	return Failure("%sfetching from %s failed: the connection failed or the response was malformed", where, t.hostPort())
}

func refusalSentence(pr *proxyRefusal, t fetchTarget) string {
	hp := t.hostPort()
	switch pr.reason {
	case "host or port not granted":
		return fmt.Sprintf("%s is not in the grant's network.hosts", hp)
	case "destination address is not allowed":
		return fmt.Sprintf("%s resolves to an address that is not public, and the grant's network.private does not list it", hp)
	case "name did not resolve":
		return fmt.Sprintf("%s did not resolve", hp)
	case "malformed target or port":
		return fmt.Sprintf("%s is not a valid host and port", hp)
	}
	return fmt.Sprintf("%s: %s (HTTP %d)", hp, clip(pr.reason), pr.status)
}
