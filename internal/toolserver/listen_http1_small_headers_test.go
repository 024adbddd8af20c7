package toolserver_test

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/connlimit"
	"github.com/airlockhq/airlock/internal/sandboxtest"
	"github.com/airlockhq/airlock/internal/toolserver"
)

// TestListenSpeaksHTTP1WithSmallHeaders: the tool-server's HTTP server, as
// `airlock tool-server --listen --tls-cert` serves it, negotiates no HTTP/2
// (whose one connection carries 250 requests at once, past what the
// connection cap bounds; a broker's connection is a WebSocket, which is
// HTTP/1.1's) and answers a header block past toolserver.MaxHeaderBytes
// with 431 before the token is checked, where net/http's default let each
// connection without the token hold 1 MiB for the header timeout.
func TestListenSpeaksHTTP1WithSmallHeaders(t *testing.T) {
	w := newWorkspace(t)
	srv, err := toolserver.NewServer(&toolserver.ServerOptions{Grant: w.grant, Backend: sandboxtest.Native(t)})
	if err != nil {
		t.Fatal(err)
	}
	certSrv := httptest.NewUnstartedServer(nil)
	certSrv.StartTLS()
	cert := certSrv.TLS.Certificates[0]
	certSrv.Close()

	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := srv.HTTPServer(testToken)
	hs.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	ln := tls.NewListener(connlimit.New(tcp, 16, nil), hs.TLSConfig)
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })

	c, err := tls.Dial("tcp", tcp.Addr().String(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2", "http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(60 * time.Second))
	if p := c.ConnectionState().NegotiatedProtocol; p == "h2" {
		t.Errorf("the tool-server negotiated HTTP/2")
	}

	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\n", tcp.Addr())
	big := strings.Repeat("a", 1000)
	for i := 0; i < 1000; i++ {
		if _, err := fmt.Fprintf(c, "X-%d: %s\r\n", i, big); err != nil {
			break
		}
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
		t.Fatalf("a request with 1 MB of headers: %v %v, want 431", resp, err)
	}
}
