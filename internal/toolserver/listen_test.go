package toolserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/connlimit"
	"github.com/airlockhq/airlock/internal/sandboxtest"
	"github.com/airlockhq/airlock/internal/toolserver"
)

// listenLike serves srv as `airlock tool-server --listen` does, capped at
// max connections, with tune applied to its http.Server. It returns the
// listener, the address and the count of WebSocket upgrades.
func listenLike(t *testing.T, srv *toolserver.Server, max int, tune func(*http.Server)) (*connlimit.Listener, string, *atomic.Int64) {
	t.Helper()
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := connlimit.New(tcp, max, &connlimit.Options{Busy: "busy", Token: testToken})
	hs := srv.HTTPServer(testToken)
	var upgrades atomic.Int64
	hs.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateHijacked {
			upgrades.Add(1)
		}
	}
	if tune != nil {
		tune(hs)
	}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return ln, tcp.Addr().String(), &upgrades
}

// rawDial opens a TCP connection to addr.
func rawDial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	// Only a guard against hanging the test: the server must act first.
	c.SetDeadline(time.Now().Add(60 * time.Second))
	return c
}

// closedByServer reads r until the server closes the connection.
func closedByServer(t *testing.T, r io.Reader, what string) {
	t.Helper()
	_, err := io.Copy(io.Discard, r)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("%s: the server never closed the connection", what)
	}
}

// TestUnauthenticatedHoldNothing: over real TCP connections, a client
// without the token is answered 401 and its connection closed, and the
// connections it opens and holds without a word cannot keep a broker out
// or push its connection out.
func TestUnauthenticatedHoldNothing(t *testing.T) {
	w := newWorkspace(t)
	srv, err := toolserver.NewServer(&toolserver.ServerOptions{Grant: w.grant, Backend: sandboxtest.Native(t), Heartbeat: testHeartbeat})
	if err != nil {
		t.Fatal(err)
	}
	ln, addr, upgrades := listenLike(t, srv, 4, nil)

	c := rawDial(t, addr)
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a request without the token: %v %v", resp, err)
	}
	if !resp.Close {
		t.Errorf("a 401 without Connection: close: the client may keep the connection")
	}
	io.Copy(io.Discard, resp.Body)
	closedByServer(t, br, "after a 401")

	// Silent connections fill the cap: the broker still connects...
	for range 4 {
		rawDial(t, addr)
	}
	waitFor(t, "the cap filled", func() bool { return ln.Open() == 4 })
	s := w.session(t, remote(t, "ws://"+addr, nil))
	// ...and more of them do not push its connection out.
	for range 8 {
		rawDial(t, addr)
	}
	waitFor(t, "the silent connections accepted", func() bool { return ln.Evicted() == 9 })
	res, err := s.Call(context.Background(), "read_file", json.RawMessage(`{"path":"a.txt"}`))
	if err != nil || res.Class != broker.ClassOK {
		t.Fatalf("a call with the cap full of silent connections: %v %+v", err, res)
	}
	if n := upgrades.Load(); n != 1 {
		t.Errorf("%d WebSocket connections, want the broker's one: it was pushed out", n)
	}
}

// TestListenTimeouts: a connection that sends nothing, and one left idle
// after an answer, are closed by the tool-server.
func TestListenTimeouts(t *testing.T) {
	w := newWorkspace(t)
	srv, err := toolserver.NewServer(&toolserver.ServerOptions{Grant: w.grant, Backend: sandboxtest.Native(t)})
	if err != nil {
		t.Fatal(err)
	}
	if hs := srv.HTTPServer(testToken); hs.ReadHeaderTimeout <= 0 || hs.IdleTimeout <= 0 {
		t.Fatalf("header timeout %s, idle timeout %s: a silent or idle connection is held forever", hs.ReadHeaderTimeout, hs.IdleTimeout)
	}
	_, addr, _ := listenLike(t, srv, 16, func(hs *http.Server) {
		hs.ReadHeaderTimeout, hs.IdleTimeout = 200*time.Millisecond, 200*time.Millisecond
	})
	closedByServer(t, rawDial(t, addr), "a silent connection")
	// A request with the token but no upgrade is answered, and its
	// connection then idles.
	c := rawDial(t, addr)
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n", addr, testToken)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	closedByServer(t, br, "an idle connection")
}
