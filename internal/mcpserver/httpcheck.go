package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Methods a POST may carry without an Mcp-Session-Id: the ones that start
// a session (initialize) or ask what the server speaks (server/discover).
var sessionless = map[string]bool{"initialize": true, "server/discover": true}

// checkPost reads a JSON POST body within timeout and checks it as
// checkMessage does, before the SDK sees it: a malformed or ambiguous
// message gets a JSON-RPC error object with 400, and so does any message
// but initialize or server/discover without an Mcp-Session-Id; one of those
// two is refused with 503 and a JSON-RPC error naming the cap when sessions
// are full. The SDK then reads the checked body from memory (it is capped
// by limitBody already).
func checkPost(timeout time.Duration, sessions *sessionCap, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); r.Method != http.MethodPost || mt != "application/json" {
			h.ServeHTTP(w, r) // the SDK refuses the method or media type
			return
		}
		rc := http.NewResponseController(w)
		// Without a deadline of its own a body could trickle in forever: the
		// server's ReadTimeout stays off, as it would cut long calls short.
		_ = rc.SetReadDeadline(time.Now().Add(timeout))
		body, err := io.ReadAll(r.Body)
		if err != nil {
			// The connection closes after the answer; a deadline already
			// passed keeps net/http from waiting for the rest of the body.
			_ = rc.SetReadDeadline(time.Now())
			var mbe *http.MaxBytesError
			w.Header().Set("Connection", "close")
			switch {
			case errors.As(err, &mbe):
				http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
			case errors.Is(err, os.ErrDeadlineExceeded):
				http.Error(w, fmt.Sprintf("the request body was not received within %s", timeout), http.StatusRequestTimeout)
			default:
				http.Error(w, "reading the request body failed", http.StatusBadRequest)
			}
			return
		}
		_ = rc.SetReadDeadline(time.Time{})
		msg, bad := checkMessage(body)
		if bad == nil && r.Header.Get("Mcp-Session-Id") == "" {
			if req, ok := msg.(*jsonrpc.Request); !ok || !sessionless[req.Method] {
				bad = invalidRequest(messageID(msg), "no Mcp-Session-Id header: a session starts with initialize, and every later request carries the session id it returned")
			}
		}
		if bad != nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			w.Write(encodeReply(bad))
			return
		}
		if r.Header.Get("Mcp-Session-Id") == "" {
			leave, refusal := sessions.enter()
			if refusal != "" {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusServiceUnavailable)
				w.Write(encodeReply(&rpcError{ID: messageID(msg), Code: codeTooManySessions, Message: refusal}))
				return
			}
			defer leave()
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		h.ServeHTTP(w, r)
	})
}

// messageID returns the id of a request or response as raw JSON, nil for a
// notification.
func messageID(msg jsonrpc.Message) json.RawMessage {
	var id jsonrpc.ID
	switch m := msg.(type) {
	case *jsonrpc.Request:
		id = m.ID
	case *jsonrpc.Response:
		id = m.ID
	}
	if !id.IsValid() {
		return nil
	}
	b, err := json.Marshal(id.Raw())
	if err != nil {
		return nil
	}
	return b
}

// checkHost refuses, with 403, a request that arrived on a loopback address
// with a Host that is not a loopback name or address: a page whose DNS name
// was rebound to 127.0.0.1 sends its own name. The SDK makes the same check
// for /mcp; this applies it to every path.
func checkHost(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && local != nil {
			if isLoopbackHost(hostOnly(local.String())) && !isLoopbackHost(hostOnly(r.Host)) {
				w.Header().Set("Connection", "close")
				http.Error(w, fmt.Sprintf("Forbidden: Host %q is not a loopback name on a loopback listener", r.Host), http.StatusForbidden)
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// checkOrigin refuses, with 403, a request whose Origin header names a
// site other than a loopback one, the address the request arrived on, or
// one of allowed: a browser page of another site must not drive the server
// (MCP requires servers to validate Origin). A request without Origin
// (every non-browser client) passes.
func checkOrigin(allowed map[string]bool, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin != "" && !originAllowed(origin, r, allowed) {
			w.Header().Set("Connection", "close")
			http.Error(w, fmt.Sprintf("Forbidden: Origin %q is not allowed (airlock serve --allow-origin adds one)", origin), http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func originAllowed(origin string, r *http.Request, allowed map[string]bool) bool {
	norm, err := normalizeOrigin(origin)
	if err != nil {
		return false // "null", a path, an unknown scheme
	}
	if allowed[norm] {
		return true
	}
	u, _ := url.Parse(norm)
	host := u.Hostname()
	if isLoopbackHost(host) {
		return true
	}
	if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && local != nil {
		lip, oip := net.ParseIP(hostOnly(local.String())), net.ParseIP(host)
		return lip != nil && oip != nil && lip.Equal(oip)
	}
	return false
}

// CheckOrigins reports the first of list that is not an origin
// (scheme://host[:port], http or https), as HTTPOptions.AllowOrigins need.
func CheckOrigins(list []string) error {
	_, err := parseOrigins(list)
	return err
}

// parseOrigins checks and normalizes the allowed origins.
func parseOrigins(list []string) (map[string]bool, error) {
	out := map[string]bool{}
	for _, o := range list {
		n, err := normalizeOrigin(o)
		if err != nil {
			return nil, fmt.Errorf("allowed origin %q: %w", o, err)
		}
		out[n] = true
	}
	return out, nil
}

// normalizeOrigin returns origin as scheme://host[:port] in lower case, or
// why it is not an http(s) origin.
func normalizeOrigin(origin string) (string, error) {
	u, err := url.Parse(origin)
	switch {
	case err != nil:
		return "", err
	case u.Scheme != "http" && u.Scheme != "https":
		return "", errors.New("want http:// or https://")
	case u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "":
		return "", errors.New("want scheme://host[:port] and nothing else")
	}
	return strings.ToLower(u.Scheme + "://" + u.Host), nil
}

// hostOnly strips the port of host:port, and the brackets of an IPv6 address.
func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]")
}

// isLoopbackHost reports whether host (no port) is "localhost" or a loopback
// address.
func isLoopbackHost(host string) bool {
	if strings.EqualFold(strings.TrimSuffix(host, "."), "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
