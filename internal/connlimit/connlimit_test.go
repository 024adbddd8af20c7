package connlimit_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/connlimit"
)

// handler answers 200 to a request with the token and marks its
// connection authenticated, and 401 with "Connection: close" to others.
var handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer token" {
		w.Header().Set("Connection", "close")
		http.Error(w, "no", http.StatusUnauthorized)
		return
	}
	connlimit.Authenticated(r.Context())
	fmt.Fprint(w, "yes")
})

// serve serves handler through a Listener capped at max.
func serve(t *testing.T, max int) (*connlimit.Listener, string) {
	t.Helper()
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := connlimit.New(tcp, max, &connlimit.Options{Busy: "busy, try again"})
	hs := &http.Server{Handler: handler, ConnContext: connlimit.ConnContext}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return ln, tcp.Addr().String()
}

// dial opens a TCP connection to addr.
func dial(t *testing.T, addr string) net.Conn {
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

// request sends a GET on c, with the token when auth, and returns the
// response's status and body.
func request(t *testing.T, c net.Conn, br *bufio.Reader, auth bool) (int, string) {
	t.Helper()
	h := ""
	if auth {
		h = "Authorization: Bearer token\r\n"
	}
	if _, err := fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n%s\r\n", h); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("reading the response: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// closed reads c until the server closes it and returns what it read.
func closed(t *testing.T, r io.Reader) string {
	t.Helper()
	b, err := io.ReadAll(r)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the server never closed the connection (read %q)", b)
	}
	return string(b)
}

// TestUnauthenticatedMakeRoom: connections that never show the token fill
// the cap; a new one takes the place of the oldest of them, so a client
// with the token always connects. Only when every open connection has
// authenticated is a new one refused with a 503.
func TestUnauthenticatedMakeRoom(t *testing.T) {
	ln, addr := serve(t, 2)
	silent1 := dial(t, addr)
	silent2 := dial(t, addr)
	waitFor(t, "two connections open", func() bool { return ln.Open() == 2 })

	a1 := dial(t, addr)
	br1 := bufio.NewReader(a1)
	if code, body := request(t, a1, br1, true); code != http.StatusOK || body != "yes" {
		t.Fatalf("a client with the token at the cap: %d %q", code, body)
	}
	if got := closed(t, silent1); got != "" {
		t.Errorf("the oldest silent connection read %q, want it closed without a word", got)
	}

	a2 := dial(t, addr)
	br2 := bufio.NewReader(a2)
	if code, _ := request(t, a2, br2, true); code != http.StatusOK {
		t.Fatalf("a second client with the token: %d", code)
	}
	closed(t, silent2)

	// Both slots hold authenticated connections: the next is refused.
	if got := closed(t, dial(t, addr)); !strings.HasPrefix(got, "HTTP/1.1 503 ") || !strings.HasSuffix(got, "busy, try again") {
		t.Errorf("a connection past a cap of authenticated ones read %q, want a 503", got)
	}
	// The authenticated connections are still served.
	if code, _ := request(t, a1, br1, true); code != http.StatusOK {
		t.Errorf("the first authenticated connection after the refusal: %d", code)
	}
	if ln.Open() != 2 || ln.Unauthenticated() != 0 || ln.Evicted() != 2 || ln.Refused() != 1 {
		t.Errorf("open %d, unauthenticated %d, evicted %d, refused %d; want 2, 0, 2, 1", ln.Open(), ln.Unauthenticated(), ln.Evicted(), ln.Refused())
	}

	a2.Close()
	waitFor(t, "the closed connection's slot back", func() bool { return ln.Open() == 1 })
	u := dial(t, addr)
	bru := bufio.NewReader(u)
	if code, _ := request(t, u, bru, false); code != http.StatusUnauthorized {
		t.Fatalf("a request without the token: %d", code)
	}
	closed(t, bru)
	waitFor(t, "the refused client's slot back", func() bool { return ln.Open() == 1 })
}

// TestAuthenticatedUnderTLS: a connection is found under its TLS layer, so
// one that authenticated over HTTPS keeps its slot.
func TestAuthenticatedUnderTLS(t *testing.T) {
	hs := httptest.NewUnstartedServer(handler)
	ln := connlimit.New(hs.Listener, 1, nil)
	hs.Listener = ln
	hs.Config.ConnContext = connlimit.ConnContext
	hs.StartTLS()
	defer hs.Close()

	silent := dial(t, hs.Listener.Addr().String())
	waitFor(t, "the silent connection open", func() bool { return ln.Open() == 1 })
	req, _ := http.NewRequest(http.MethodGet, hs.URL, nil)
	req.Header.Set("Authorization", "Bearer token")
	resp, err := hs.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("over TLS with the token: %d", resp.StatusCode)
	}
	closed(t, silent)

	// The kept-alive authenticated connection holds the only slot.
	other := &http.Client{Transport: hs.Client().Transport.(*http.Transport).Clone()}
	if resp, err := other.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("a second connection took the slot of an authenticated one: %d", resp.StatusCode)
	}
	if ln.Refused() != 1 || ln.Evicted() != 1 {
		t.Errorf("refused %d, evicted %d; want 1, 1", ln.Refused(), ln.Evicted())
	}
}

// waitFor polls cond until it holds, failing after a generous deadline:
// an event to wait on, not a time window asserted.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// longToken is a token long enough for a Listener to look for.
const longToken = "0123456789abcdef-a-long-token"

// acceptAll accepts every connection of ln without reading from it, as a
// server whose handlers have not run yet, and sends each on the channel.
func acceptAll(t *testing.T, ln *connlimit.Listener) <-chan net.Conn {
	t.Helper()
	ch := make(chan net.Conn, 1024)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				close(ch)
				return
			}
			ch <- c
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		for c := range ch {
			c.Close()
		}
	})
	return ch
}

// listen returns a Listener capped at max on a fresh loopback port.
func listen(t *testing.T, max int, o *connlimit.Options) (*connlimit.Listener, string) {
	t.Helper()
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return connlimit.New(tcp, max, o), tcp.Addr().String()
}

// stillOpen reports whether the server has left c open: a closed one
// reads EOF at once, an open one waits out the short deadline.
func stillOpen(c net.Conn) bool {
	c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	_, err := c.Read(make([]byte, 1))
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestTokenArrivedIsNeverEvicted: a connection whose request, token and
// all, has arrived is not closed for newcomers even though no handler has
// read it yet (a flood keeps handlers from running), while silent
// connections opened before and after it give way.
func TestTokenArrivedIsNeverEvicted(t *testing.T) {
	ln, addr := listen(t, 4, &connlimit.Options{Token: longToken})
	accepted := acceptAll(t, ln)
	first := dial(t, addr)
	<-accepted
	authorised := dial(t, addr)
	if _, err := fmt.Fprintf(authorised, "GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", longToken); err != nil {
		t.Fatal(err)
	}
	<-accepted
	const flood = 40
	for range flood {
		dial(t, addr)
		<-accepted
	}
	if !stillOpen(authorised) {
		t.Fatal("the connection that had sent the token was closed to make room")
	}
	if stillOpen(first) {
		t.Error("the oldest silent connection was kept")
	}
	// 42 connections on a cap of 4, one of them authenticated: 3 slots
	// held by the newest silent ones, and each of the other 38 evicted.
	if ln.Evicted() != flood-2 || ln.Unauthenticated() != 3 {
		t.Errorf("evicted %d, unauthenticated %d; want %d, 3", ln.Evicted(), ln.Unauthenticated(), flood-2)
	}
}

// TestSilentGiveWayFirst: at the cap, a connection that has sent nothing
// is closed before an older one that has sent something, as a TLS client
// sends its hello before the listener can see any token.
func TestSilentGiveWayFirst(t *testing.T) {
	ln, addr := listen(t, 2, nil)
	accepted := acceptAll(t, ln)
	spoke := dial(t, addr)
	if _, err := io.WriteString(spoke, "\x16\x03\x01"); err != nil {
		t.Fatal(err)
	}
	<-accepted
	silent := dial(t, addr)
	<-accepted
	dial(t, addr)
	<-accepted
	if stillOpen(silent) {
		t.Error("the silent connection was kept")
	}
	if !stillOpen(spoke) {
		t.Error("the older connection that had sent something was closed before a silent one")
	}
}

// TestTokenFoundAcrossReads: a token the server reads in two pieces still
// authenticates its connection; a token shorter than MinToken is never
// looked for.
func TestTokenFoundAcrossReads(t *testing.T) {
	for _, tc := range []struct {
		token string
		auth  bool
	}{{longToken, true}, {"short-token", false}} {
		ln, addr := listen(t, 4, &connlimit.Options{Token: tc.token})
		accepted := acceptAll(t, ln)
		c := dial(t, addr)
		sc := <-accepted
		half := len(tc.token) / 2
		buf := make([]byte, 64)
		for _, piece := range []string{"Authorization: Bearer " + tc.token[:half], tc.token[half:] + "\r\n"} {
			if _, err := io.WriteString(c, piece); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadFull(sc, buf[:len(piece)]); err != nil {
				t.Fatal(err)
			}
		}
		if got := ln.Unauthenticated() == 0; got != tc.auth {
			t.Errorf("token %q read in two pieces: authenticated %v, want %v", tc.token, got, tc.auth)
		}
	}
}
