package egress

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
)

// hostRecorder serves one HTTP upstream: it records the Host of every
// request it reads and the raw bytes of anything it cannot read as one, and
// answers each request with "ok".
type hostRecorder struct {
	seen chan string
}

func newHostRecorder() *hostRecorder { return &hostRecorder{seen: make(chan string, 16)} }

func (r *hostRecorder) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			if rest, _ := io.ReadAll(br); len(rest) > 0 {
				r.seen <- "raw " + string(rest)
			}
			close(r.seen)
			return
		}
		io.Copy(io.Discard, req.Body)
		r.seen <- "host " + req.Host
		if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"); err != nil || req.Close {
			close(r.seen)
			return
		}
	}
}

// all returns what the upstream saw, once it has closed.
func (r *hostRecorder) all() []string {
	var got []string
	for s := range r.seen {
		got = append(got, s)
	}
	return got
}

// TestTunnelToPort80ChecksEveryHostHeader sends, through a tunnel opened for
// a granted name on port 80 (by CONNECT and by SOCKS5), plain HTTP requests
// whose Host header names another site. A server that serves many names (a
// CDN's front) routes such a request by its Host header, so relaying the
// bytes would reach an ungranted site from a granted name's address. The
// upstream must only ever see the granted name, one request per tunnel.
func TestTunnelToPort80ChecksEveryHostHeader(t *testing.T) {
	const requests = "GET /1 HTTP/1.1\r\nHost: a.test\r\n\r\n" +
		"GET /2 HTTP/1.1\r\nHost: evil.test\r\n\r\n"
	open := map[string]func(t *testing.T, c *net.UnixConn){
		"connect": func(t *testing.T, c *net.UnixConn) {
			io.WriteString(c, "CONNECT a.test:80 HTTP/1.1\r\nHost: a.test:80\r\n\r\n")
			br := bufio.NewReader(c)
			line, err := br.ReadString('\n')
			if err != nil || !strings.HasPrefix(line, "HTTP/1.1 200") {
				t.Fatalf("CONNECT reply %q, %v", line, err)
			}
			br.ReadString('\n')
		},
		"socks5": func(t *testing.T, c *net.UnixConn) { socksOpen(t, c, socksName("a.test", 80)) },
	}
	for name, openTunnel := range open {
		for _, first := range []string{
			"GET / HTTP/1.1\r\nHost: evil.test\r\n\r\n",
			"GET http://evil.test/ HTTP/1.1\r\nHost: evil.test\r\n\r\n",
			requests,
		} {
			t.Run(name, func(t *testing.T) {
				h := newHarness(t, nil)
				up := newHostRecorder()
				h.dial.serve = up.serve
				c := h.conn()
				openTunnel(t, c)
				io.WriteString(c, first)
				c.CloseWrite()
				io.ReadAll(c)
				for _, s := range up.all() {
					if s != "host a.test" {
						t.Errorf("the upstream of a tunnel to a.test:80 saw %q, want only host a.test", s)
					}
				}
			})
		}
	}
}

// TestTunnelToPort80RefusesOtherProtocols: what is not an HTTP/1.x request
// (a request line after blank lines, which some servers skip; HTTP/2's
// preface; TLS; anything else) goes nowhere through a tunnel to port 80,
// and the refusal is on the record.
func TestTunnelToPort80RefusesOtherProtocols(t *testing.T) {
	for _, first := range []string{
		"\r\nGET / HTTP/1.1\r\nHost: evil.test\r\n\r\n",
		"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
		"\x16\x03\x01\x00\x05hello",
		"hello, upstream\n",
	} {
		t.Run("", func(t *testing.T) {
			h := newHarness(t, nil)
			up := newHostRecorder()
			h.dial.serve = up.serve
			c := h.conn()
			io.WriteString(c, "CONNECT a.test:80 HTTP/1.1\r\nHost: a.test:80\r\n\r\n"+first)
			c.CloseWrite()
			io.ReadAll(c)
			if d := h.next(); d.Allowed || !strings.Contains(d.Reason, "port 80") {
				t.Errorf("Decision = %+v, want a refusal naming port 80", d)
			}
			h.stop()
			if got := up.all(); len(got) > 0 {
				t.Errorf("the upstream saw %q", got)
			}
		})
	}
}
