package mcpserver_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/connlimit"
	"github.com/airlockhq/airlock/internal/mcpserver"
)

// stalledReader opens a session on the server at addr and, on a
// connection of its own, calls for a 12 MB answer (more than the sockets'
// buffers hold) and stops reading once the answer has begun. It returns
// the session id and the connection.
func stalledReader(t *testing.T, addr string) (string, net.Conn) {
	t.Helper()
	session := rawHTTPSession(t, "http://"+addr)
	// A small receive buffer, set before the connection is made so the
	// window stays small.
	d := net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		return rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4<<10) })
	}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	// Only a guard against hanging the test.
	c.SetDeadline(time.Now().Add(2 * time.Minute))
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"shell","arguments":{"command":"head -c 12000000 /dev/zero | tr '\\000' a"}}}`
	fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nMcp-Session-Id: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s", addr, testToken, session, len(body), body)
	br := bufio.NewReaderSize(c, 64)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the start of the answer: %v", err)
		}
		if strings.HasPrefix(line, "event: message") {
			return session, c
		}
	}
}

// TestStalledReaderIsCut: a client with the token asks for a call whose
// answer is larger than the sockets' buffers, then stops reading but keeps
// its connection open. With the write timeout of `airlock serve` (made
// short here) the server gives up on that answer and closes the
// connection, and the session is free again. On main the write waited for
// the client forever, and since a session's close waits for its answers
// to be written, ending the session (DELETE, the idle timeout, which a
// POST in progress holds off anyway, or Shutdown) hung with it.
func TestStalledReaderIsCut(t *testing.T) {
	// Answers of up to 16 MiB.
	f := newFixtureFlags(t, grant.Flags{Limits: grant.Limits{Output: 16 << 20}})
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := connlimit.New(tcp, mcpserver.DefaultMaxConnections, &connlimit.Options{Busy: mcpserver.BusyText, Token: testToken, WriteTimeout: 500 * time.Millisecond})
	h, err := f.srv.Handler(&mcpserver.HTTPOptions{Token: testToken, Connections: ln})
	if err != nil {
		t.Fatal(err)
	}
	hs := mcpserver.NewHTTPServer(h, nil)
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	addr := tcp.Addr().String()

	session, _ := stalledReader(t, addr)
	open := ln.Open()
	eventually(t, time.Minute, "the stalled connection closed by the server", func() bool { return ln.Open() < open })

	// The session ends at once when its client asks.
	deleted := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodDelete, "http://"+addr+mcpserver.PathMCP, nil)
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Mcp-Session-Id", session)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			deleted <- 0
			return
		}
		resp.Body.Close()
		deleted <- resp.StatusCode
	}()
	select {
	case code := <-deleted:
		if code != http.StatusNoContent {
			t.Errorf("DELETE of the session: %d, want 204", code)
		}
	case <-time.After(time.Minute):
		t.Fatal("DELETE of the session has not returned after a minute")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := f.srv.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

// TestShutdownDoesNotWaitForAStalledReader: whatever bounds a client's
// reading (on a listener without a write timeout, none; with one, a client
// that takes 64 KiB just within it holds a write for minutes), Shutdown
// returns once its deadline and the grace for answers have passed, and the
// HTTP server's Close then cuts the connections. On main Shutdown waited
// for the session of a client that stopped reading to close, which waits
// for the answer being written, forever: SIGTERM never ended airlock serve.
func TestShutdownDoesNotWaitForAStalledReader(t *testing.T) {
	f := newFixtureFlags(t, grant.Flags{Limits: grant.Limits{Output: 16 << 20}})
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := connlimit.New(tcp, mcpserver.DefaultMaxConnections, nil)
	h, err := f.srv.Handler(&mcpserver.HTTPOptions{Token: testToken, Connections: ln})
	if err != nil {
		t.Fatal(err)
	}
	hs := mcpserver.NewHTTPServer(h, nil)
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	stalledReader(t, tcp.Addr().String())

	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		shut <- f.srv.Shutdown(ctx)
	}()
	select {
	case err := <-shut:
		if err == nil {
			t.Error("Shutdown: nil, want an error saying an answer was not written")
		}
	case <-time.After(time.Minute):
		t.Fatal("Shutdown has not returned after a minute: it waits for an answer a client does not read")
	}
	hs.Close()
	eventually(t, time.Minute, "the stalled connection closed", func() bool { return ln.Open() == 0 })
}
