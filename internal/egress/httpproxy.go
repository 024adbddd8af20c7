package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/textproto"
	"strings"
	"time"
)

// The HTTP side:
//
//	CONNECT host:port HTTP/1.1  →  checks, resolve, dial  →  "200 Connection established", tunnel
//	GET http://host[:port]/path HTTP/1.1  →  checks, resolve, dial  →  request rewritten to
//	    origin-form (hop-by-hop headers and Proxy-Authorization dropped, Connection: close)
//	    and sent to the checked address; the response is copied back; the connection ends.
//
// A malformed request, target or port is 400; a denial 403; a name that does
// not resolve or a failed dial 502. Error bodies are one short line written by
// the proxy; no upstream byte is ever part of an error.

// hopByHop are the headers a proxy must not forward (RFC 9110 §7.6.1), plus
// the proxy-only ones.
var hopByHop = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

func httpError(w io.Writer, code int, reason string) {
	body := reason + "\n"
	fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
		code, http.StatusText(code), len(body), body)
}

// clientReason is the sandbox-facing summary of a refusal. It names the
// category only: the full reason (with resolved addresses) goes to the audit
// Decision, not to the sandbox.
func clientReason(f fail, d Decision) string {
	switch {
	case f == failDenied && d.Addr.IsValid():
		return "destination address is not allowed"
	case f == failDenied:
		return "host or port not granted"
	case f == failResolve:
		return "name did not resolve"
	}
	return "connection failed: " + dialReason(f)
}

func httpStatus(f fail) int {
	switch f {
	case failBad:
		return http.StatusBadRequest
	case failDenied:
		return http.StatusForbidden
	case failHostUnreach:
		return http.StatusGatewayTimeout
	}
	return http.StatusBadGateway
}

func (p *Proxy) httpProxy(ctx context.Context, c net.Conn, br *bufio.Reader, hr *handshakeReader) {
	req, err := http.ReadRequest(br)
	if err != nil {
		code := http.StatusBadRequest
		if errors.Is(err, errHandshakeTooLarge) {
			code = http.StatusRequestHeaderFieldsTooLarge
		}
		httpError(c, code, "malformed proxy request")
		p.decide(Decision{Proto: "http", Reason: "malformed request"})
		return
	}
	proto := "http"
	if req.Method == http.MethodConnect {
		proto = "connect"
	}
	t, err := httpTarget(req)
	if err != nil {
		httpError(c, http.StatusBadRequest, "malformed target or port")
		p.decide(Decision{Proto: proto, Host: loggable(req.Host), Reason: "malformed target or port"})
		return
	}
	up, d, f := p.open(ctx, proto, t)
	if f != failNone {
		httpError(c, httpStatus(f), "airlock egress: "+clientReason(f, d))
		p.decide(d)
		return
	}
	defer closeOnEnd(ctx, up)()
	if proto == "connect" {
		if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
			up.Close()
			d.Allowed, d.Reason = false, "client went away before the reply"
			p.decide(d)
			return
		}
		p.tunnel(c, up, br, hr, t, d)
		return
	}
	defer up.Close()
	p.decide(d)
	p.forwardHTTP(c, up, req, hr, t)
}

// httpTarget extracts the checked target from a CONNECT authority or an
// absolute-form http:// URL.
func httpTarget(req *http.Request) (target, error) {
	if req.Method == http.MethodConnect {
		if strings.HasPrefix(req.RequestURI, "/") {
			return target{}, fmt.Errorf("CONNECT %q: %w", req.RequestURI, ErrBadHost)
		}
		host, portText, err := net.SplitHostPort(req.RequestURI)
		if err != nil {
			return target{}, fmt.Errorf("CONNECT target: %w: %w", err, ErrBadHost)
		}
		port, err := parsePort(portText)
		if err != nil {
			return target{}, err
		}
		return parseTarget(host, port)
	}
	u := req.URL
	if u == nil || u.Scheme != "http" || u.Host == "" || u.User != nil || u.Opaque != "" {
		return target{}, fmt.Errorf("request target is not an absolute http URL: %w", ErrBadHost)
	}
	portText := u.Port()
	if portText == "" {
		if strings.HasSuffix(u.Host, ":") {
			return target{}, fmt.Errorf("empty port: %w", ErrBadHost)
		}
		portText = "80"
	}
	port, err := parsePort(portText)
	if err != nil {
		return target{}, err
	}
	return parseTarget(u.Hostname(), port)
}

// forwardHTTP sends one rewritten request to up and copies the response back.
func (p *Proxy) forwardHTTP(c, up net.Conn, req *http.Request, hr *handshakeReader, t target) {
	p.boundBuffers(c, up)
	hr.n = int(^uint(0) >> 1) // the body is not part of the handshake
	for _, h := range req.Header.Values("Connection") {
		for _, name := range strings.Split(h, ",") {
			if name = strings.TrimSpace(name); name != "" {
				req.Header.Del(textproto.CanonicalMIMEHeaderKey(name))
			}
		}
	}
	for _, h := range hopByHop {
		req.Header.Del(h)
	}
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header["User-Agent"] = []string{""} // keeps Request.Write from adding Go's
	}
	req.Host = t.host
	if t.ip.Is6() {
		req.Host = "[" + t.host + "]"
	}
	if t.port != 80 {
		req.Host = net.JoinHostPort(t.host, fmt.Sprint(t.port))
	}
	req.URL.Scheme, req.URL.Host = "", ""
	req.Close = true
	req.RequestURI = ""

	c.SetDeadline(time.Time{})
	c.SetReadDeadline(time.Now().Add(p.o.IdleTimeout))
	up.SetWriteDeadline(time.Now().Add(p.o.IdleTimeout))
	if err := req.Write(up); err != nil {
		p.o.Logger.Debug("egress http forward", "sandbox", p.o.Sandbox, "host", t.host, "err", err)
		return
	}
	up.SetWriteDeadline(time.Time{})
	p.pipe(c, up, newActivity())
}
