package egress

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestHTTPRefusals(t *testing.T) {
	tests := []struct {
		name    string
		send    string
		status  int
		lookups int
		reason  string // substring of the Decision's reason
	}{
		{"CONNECT denied name", "CONNECT CANARY.evil.test:443 HTTP/1.1\r\nHost: x\r\n\r\n", 403, 0, "not granted"},
		{"CONNECT port 22", "CONNECT a.test:22 HTTP/1.1\r\n\r\n", 403, 0, "not granted"},
		{"CONNECT port 6379", "CONNECT a.test:6379 HTTP/1.1\r\n\r\n", 403, 0, "not granted"},
		{"CONNECT port 0", "CONNECT a.test:0 HTTP/1.1\r\n\r\n", 400, 0, "malformed"},
		{"CONNECT port 65536", "CONNECT a.test:65536 HTTP/1.1\r\n\r\n", 400, 0, "malformed"},
		{"CONNECT port 443:1", "CONNECT a.test:443:1 HTTP/1.1\r\n\r\n", 400, 0, "malformed"},
		{"CONNECT no port", "CONNECT a.test HTTP/1.1\r\n\r\n", 400, 0, "malformed"},
		{"CONNECT port name", "CONNECT a.test:https HTTP/1.1\r\n\r\n", 400, 0, "malformed"},
		{"CONNECT path", "CONNECT /a.test:443 HTTP/1.1\r\n\r\n", 400, 0, "malformed"},
		{"CONNECT decimal loopback", "CONNECT 2130706433:80 HTTP/1.1\r\n\r\n", 400, 0, "malformed"},
		{"CONNECT hex loopback", "CONNECT 0x7f000001:80 HTTP/1.1\r\n\r\n", 400, 0, "malformed"},
		{"CONNECT octal loopback", "CONNECT 0177.0.0.1:80 HTTP/1.1\r\n\r\n", 400, 0, "malformed"},
		{"CONNECT short loopback", "CONNECT 127.1:80 HTTP/1.1\r\n\r\n", 400, 0, "malformed"},
		{"CONNECT 0", "CONNECT 0:80 HTTP/1.1\r\n\r\n", 400, 0, "malformed"},
		{"CONNECT [::1]", "CONNECT [::1]:80 HTTP/1.1\r\n\r\n", 403, 0, "loopback"},
		{"CONNECT [::]", "CONNECT [::]:80 HTTP/1.1\r\n\r\n", 403, 0, "not granted"},
		{"CONNECT mapped", "CONNECT [::ffff:127.0.0.1]:80 HTTP/1.1\r\n\r\n", 403, 0, "loopback"},
		{"CONNECT mapped hex", "CONNECT [::ffff:7f00:1]:80 HTTP/1.1\r\n\r\n", 403, 0, "loopback"},
		{"CONNECT compatible", "CONNECT [::127.0.0.1]:80 HTTP/1.1\r\n\r\n", 403, 0, "not granted"},
		{"CONNECT zone", "CONNECT [fe80::1%25lo]:80 HTTP/1.1\r\n\r\n", 400, 0, "malformed"},
		{"CONNECT localhost.", "CONNECT localhost.:80 HTTP/1.1\r\n\r\n", 403, 0, "not granted"},
		{"CONNECT LOCALHOST", "CONNECT LOCALHOST:80 HTTP/1.1\r\n\r\n", 403, 0, "not granted"},
		{"CONNECT loopback answer", "CONNECT lo.test:80 HTTP/1.1\r\n\r\n", 403, 1, "::1 is not public"},
		{"CONNECT mixed answer", "CONNECT mixed.test:80 HTTP/1.1\r\n\r\n", 403, 1, "10.0.0.1"},
		{"CONNECT unresolvable", "CONNECT gone.test:80 HTTP/1.1\r\n\r\n", 502, 1, "did not resolve"},
		{"GET denied name", "GET http://CANARY.evil.test/ HTTP/1.1\r\nHost: CANARY.evil.test\r\n\r\n", 403, 0, "not granted"},
		{"GET https URL", "GET https://a.test/ HTTP/1.1\r\n\r\n", 400, 0, "malformed"},
		{"GET origin-form", "GET / HTTP/1.1\r\nHost: a.test\r\n\r\n", 400, 0, "malformed"},
		{"GET userinfo", "GET http://u:p@a.test/ HTTP/1.1\r\n\r\n", 400, 0, "malformed"},
		{"GET empty port", "GET http://a.test:/ HTTP/1.1\r\n\r\n", 400, 0, "malformed"},
		{"GET port 0", "GET http://a.test:0/ HTTP/1.1\r\n\r\n", 400, 0, "malformed"},
		{"GET metadata", "GET http://169.254.169.254/latest/meta-data/ HTTP/1.1\r\n\r\n", 403, 0, "not granted"},
		{"garbage", "\x16\x03\x01\x00\x05hello\r\n\r\n", 400, 0, "malformed"},
		{"not HTTP", "HELLO\r\n\r\n", 400, 0, "malformed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			c := h.conn()
			if _, err := io.WriteString(c, tt.send); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.status {
				t.Errorf("status %d (%s), want %d", resp.StatusCode, body, tt.status)
			}
			for _, leak := range []string{"10.0.0.1", "93.184.216.34", "::1", "host a.test"} {
				if strings.Contains(string(body), leak) {
					t.Errorf("body %q tells the sandbox %q", body, leak)
				}
			}
			if n := h.res.callCount(); n != tt.lookups {
				t.Errorf("resolver called %d times, want %d", n, tt.lookups)
			}
			if d := h.dial.dialed(); len(d) != 0 {
				t.Errorf("dialled %v", d)
			}
			d := h.next()
			if d.Allowed || !strings.Contains(d.Reason, tt.reason) {
				t.Errorf("Decision = %+v, want a denial mentioning %q", d, tt.reason)
			}
		})
	}
}

func TestHTTPHeaderCap(t *testing.T) {
	h := newHarness(t, nil)
	c := h.conn()
	go io.WriteString(c, "CONNECT a.test:80 HTTP/1.1\r\nX: "+strings.Repeat("a", 20<<10)+"\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("status %d, want 431", resp.StatusCode)
	}
}

func TestHTTPConnect(t *testing.T) {
	h := newHarness(t, nil)
	c := h.conn()
	// Request and early payload in one write.
	io.WriteString(c, "CONNECT a.test:7 HTTP/1.1\r\nHost: a.test:7\r\nProxy-Authorization: x\r\n\r\nearly bytes")
	c.CloseWrite()
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	if want := "HTTP/1.1 200 Connection established\r\n\r\nearly bytes"; string(got) != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	d := h.next()
	if !d.Allowed || d.Proto != "connect" || d.Host != "a.test" || d.Addr.String() != "93.184.216.34" {
		t.Fatalf("Decision = %+v", d)
	}
}

func TestHTTPForward(t *testing.T) {
	h := newHarness(t, nil)
	upstreamReq := make(chan string, 1)
	h.dial.serve = func(c net.Conn) {
		defer c.Close()
		br := bufio.NewReader(c)
		req, err := http.ReadRequest(br)
		if err != nil {
			upstreamReq <- "error: " + err.Error()
			return
		}
		body, _ := io.ReadAll(req.Body)
		var hdr []string
		for k := range req.Header {
			hdr = append(hdr, k)
		}
		upstreamReq <- req.Method + " " + req.RequestURI + " host=" + req.Host + " body=" + string(body) +
			" close=" + map[bool]string{true: "yes", false: "no"}[req.Close] + " headers=" + strings.Join(slices.Sorted(slices.Values(hdr)), ",")
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello")
	}
	c := h.conn()
	io.WriteString(c, "POST http://A.test/p?q=1 HTTP/1.1\r\nHost: evil.test\r\nProxy-Authorization: Basic c2VjcmV0\r\n"+
		"Proxy-Connection: keep-alive\r\nConnection: X-Drop\r\nX-Drop: 1\r\nX-Keep: 2\r\nContent-Length: 3\r\n\r\nabc")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(body) != "hello" {
		t.Fatalf("response %d %q", resp.StatusCode, body)
	}
	want := "POST /p?q=1 host=a.test body=abc close=yes headers=Connection,Content-Length,X-Keep"
	if diff := cmp.Diff(want, <-upstreamReq); diff != "" {
		t.Fatalf("upstream request (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"93.184.216.34:80"}, h.dial.dialed()); diff != "" {
		t.Fatalf("dialled (-want +got):\n%s", diff)
	}
	if d := h.next(); !d.Allowed || d.Proto != "http" {
		t.Fatalf("Decision = %+v", d)
	}
}

func TestHTTPDripFeed(t *testing.T) {
	h := newHarness(t, nil)
	c := h.conn()
	for _, b := range []byte("CONNECT a.test:7 HTTP/1.1\r\nHost: a.test\r\n\r\n") {
		if _, err := c.Write([]byte{b}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("CONNECT: %v, %v", resp, err)
	}
	io.WriteString(c, "drip")
	c.CloseWrite()
	if got, _ := io.ReadAll(br); string(got) != "drip" {
		t.Fatalf("echo %q", got)
	}
}

func TestHTTPHandshakeTimeout(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.HandshakeTimeout = 100 * time.Millisecond })
	c := h.conn()
	io.WriteString(c, "CONNECT a.test:80 HTTP/1.1\r\nHost: a.te") // never finished
	start := time.Now()
	got, _ := io.ReadAll(c)
	// A cap, not a timing: the handshake timer, not the 5-minute idle one,
	// ended the connection.
	if time.Since(start) > 60*time.Second || strings.Contains(string(got), " 200 ") {
		t.Fatalf("got %q after %v", got, time.Since(start))
	}
	if len(h.dial.dialed()) != 0 {
		t.Fatal("dialled on an unfinished request")
	}
}
