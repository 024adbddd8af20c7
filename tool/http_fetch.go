package tool

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
)

const httpFetchDescription = `Fetches a URL with GET (or HEAD) through airlock's egress proxy and returns the response body, then a last line "[http STATUS]".
url must be https:// (http:// only for hosts the grant allows plain HTTP) and its host must be granted; no user:password@ in the URL. Redirects are followed, at most 5, and every one is checked again: only http(s), never from https down to http, and the host must be granted. Credentials the grant attaches go only to their own host, in their own header, over https only, and are dropped when a redirect changes scheme, host or port.
Limits: the response headers are capped at 64 KiB, the body at 5 MiB (decompressed and compressed alike), the whole fetch at 30 seconds (or the call's time limit, if shorter); the text returned is capped (1 MiB by default) with a note of what was cut. A binary body is summarised by its type and size, not returned. A refusal says which rule refused it.`

// HTTPFetchArgs are http_fetch's arguments.
type HTTPFetchArgs struct {
	URL    string `json:"url" desc:"the https:// URL to fetch (http:// only where the grant allows plain HTTP)"`
	Method string `json:"method,omitempty" desc:"GET (default) or HEAD" enum:"GET,HEAD"`
}

// maxURLBytes caps the length of a URL argument.
const maxURLBytes = 8 << 10

func (a *HTTPFetchArgs) validate() error {
	if a.Method != "" && a.Method != "GET" && a.Method != "HEAD" {
		return fmt.Errorf("field %q: must be GET or HEAD, got %q", "method", a.Method)
	}
	if len(a.URL) > maxURLBytes {
		return fmt.Errorf("field %q: longer than %d bytes", "url", maxURLBytes)
	}
	if _, err := checkFetchURL(a.URL); err != nil {
		return fmt.Errorf("field %q: %w", "url", err)
	}
	return nil
}

// Access reports the URL's host and port, so the grant check refuses a host
// it does not name before any sandbox exists.
func (a HTTPFetchArgs) Access() Access {
	t, err := checkFetchURL(a.URL)
	if err != nil {
		// validate refused it already; name something no grant allows.
		return Access{Hosts: []string{"invalid.invalid:0"}}
	}
	return Access{Hosts: []string{t.hostPort()}}
}

var httpFetch = define("http_fetch", httpFetchDescription, runHTTPFetch)

// fetchTarget is a checked URL: scheme "http" or "https", a normalised host
// and an explicit port.
type fetchTarget struct {
	u      *url.URL
	scheme string
	host   string
	port   int
}

func (t fetchTarget) hostPort() string { return net.JoinHostPort(t.host, strconv.Itoa(t.port)) }

// origin is what credentials are bound to: scheme, host and port.
func (t fetchTarget) origin() string { return t.scheme + "://" + t.hostPort() }

// checkFetchURL parses an absolute http(s) URL with a host, no userinfo and
// no fragment-only tricks; the fragment is dropped. It does not decide
// whether http is allowed.
func checkFetchURL(raw string) (fetchTarget, error) { return checkFetchURLClip(raw, clip) }

// checkFetchURLClip is checkFetchURL quoting raw in its errors through clip:
// a redirect's Location is the server's text, which may reflect a secret,
// and it must be redacted before it is cut (fetcher.clip), or the cut
// leaves the secret's start.
func checkFetchURLClip(raw string, clip func(string) string) (fetchTarget, error) {
	if strings.ContainsAny(raw, " \t\r\n\x00") {
		return fetchTarget{}, fmt.Errorf("%q contains whitespace or control characters", clip(raw))
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fetchTarget{}, fmt.Errorf("%q is not a URL", clip(raw))
	}
	scheme := strings.ToLower(u.Scheme)
	if scheme != "https" && scheme != "http" {
		if scheme == "" {
			return fetchTarget{}, fmt.Errorf("%q is not an absolute URL: start it with https://", clip(raw))
		}
		return fetchTarget{}, fmt.Errorf("the scheme %q is not fetched: only https (and http where the grant allows it)", scheme)
	}
	if u.Opaque != "" || u.Host == "" {
		return fetchTarget{}, fmt.Errorf("%q has no host", clip(raw))
	}
	if u.User != nil {
		return fetchTarget{}, fmt.Errorf("%q carries user information; credentials never go in a URL", scheme+"://…@"+clip(u.Host))
	}
	host, err := normHost(u.Hostname())
	if err != nil {
		return fetchTarget{}, err
	}
	port := 443
	if scheme == "http" {
		port = 80
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 || p[0] == '0' {
			return fetchTarget{}, fmt.Errorf("the port %q is not in 1..65535", clip(p))
		}
		port = n
	}
	c := *u
	c.Scheme, c.Fragment, c.RawFragment = scheme, "", ""
	return fetchTarget{u: &c, scheme: scheme, host: host, port: port}, nil
}

// clip is the package's clip for text the server chose (a header, a
// Location): redacted first, so that a secret echoed across the clip is a
// label there, not a start of itself that no later redaction matches.
func (f *fetcher) clip(s string) string { return clip(f.red.String(s)) }

// clip shortens s for an error message.
func clip(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
