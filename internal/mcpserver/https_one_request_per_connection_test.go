package mcpserver_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/connlimit"
	"github.com/airlockhq/airlock/internal/mcpserver"
)

// TestHTTPSConnectionHoldsOneRequestAtATime: over HTTPS, as over plain
// HTTP, one connection carries one request at a time, so --max-connections
// bounds the requests a client holds at once (and with --max-body-bytes the
// memory their bodies take). On main, HTTPS served HTTP/2, where one
// connection with the token opened 100 concurrent POSTs (250 are allowed),
// each body held in memory while it trickled in for up to 30 s: 256
// connections could hold 64,000 bodies of 4 MiB.
func TestHTTPSConnectionHoldsOneRequestAtATime(t *testing.T) {
	f := newFixture(t, nil, nil)
	const token = "0123456789abcdef-token"
	h, err := f.srv.Handler(&mcpserver.HTTPOptions{Token: token})
	if err != nil {
		t.Fatal(err)
	}
	var inHandler, most atomic.Int64
	counted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inHandler.Add(1)
		defer inHandler.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		h.ServeHTTP(w, r)
	})

	// A certificate for 127.0.0.1, and a client that trusts it.
	certSrv := httptest.NewUnstartedServer(nil)
	certSrv.StartTLS()
	cert := certSrv.TLS.Certificates[0]
	pool := x509.NewCertPool()
	pool.AddCert(certSrv.Certificate())
	certSrv.Close()

	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := connlimit.New(tcp, mcpserver.DefaultMaxConnections, nil)
	hs := mcpserver.NewHTTPServer(counted, &mcpserver.HTTPServerOptions{
		TLS: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
	})
	var accepted atomic.Int64
	hs.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			accepted.Add(1)
		}
	}
	go hs.ServeTLS(ln, "", "")
	defer hs.Close()

	client := &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: pool},
		ForceAttemptHTTP2: true,
	}}
	defer client.CloseIdleConnections()
	url := "https://" + tcp.Addr().String() + mcpserver.PathMCP
	// One connection first, which the POSTs share if it takes several.
	resp, err := client.Get(strings.TrimSuffix(url, mcpserver.PathMCP) + mcpserver.PathHealth)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	proto := resp.Proto

	// Each POST sends 1 MiB of its body, then waits: the server holds
	// what it has read until the rest arrives or the body timeout passes.
	const posts = 100
	stall := make(chan struct{})
	var wg sync.WaitGroup
	defer func() { close(stall); wg.Wait() }()
	for range posts {
		pr, pw := io.Pipe()
		req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, url, pr)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		wg.Add(2)
		go func() {
			defer wg.Done()
			pw.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"x":"`))
			pw.Write(bytes.Repeat([]byte("x"), 1<<20))
			<-stall
			pw.CloseWithError(errors.New("the test is over"))
		}()
		go func() {
			defer wg.Done()
			if resp, err := client.Do(req); err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		}()
	}
	// Wait until every POST is in the handler (HTTP/2: all on one
	// connection; HTTP/1.1: one connection each).
	for deadline := time.Now().Add(2 * time.Minute); inHandler.Load() < posts; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d POSTs reached the handler", inHandler.Load(), posts)
		}
	}
	if conns := accepted.Load(); most.Load() > conns {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		t.Fatalf("%d requests were in the handler at once on %d connection(s) (%s; heap in use %d MB): a connection must carry one request at a time",
			most.Load(), conns, proto, ms.HeapInuse>>20)
	}
}
