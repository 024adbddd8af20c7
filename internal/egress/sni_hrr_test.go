package egress

import (
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/egresstest"
)

// helloRetryRecord is a TLS 1.3 HelloRetryRequest (RFC 8446 §4.1.4) in one
// record, asking for a P-256 key share.
func helloRetryRecord() []byte {
	var body []byte
	body = append(body, 3, 3)
	body = append(body, hrrRandom[:]...)
	body = append(body, 0)          // legacy_session_id_echo
	body = append(body, 0x13, 0x01) // TLS_AES_128_GCM_SHA256
	body = append(body, 0)          // legacy_compression_method
	exts := []byte{0x00, 0x2b, 0, 2, 3, 4, 0x00, 0x33, 0, 2, 0, 0x17}
	body = binary.BigEndian.AppendUint16(body, uint16(len(exts)))
	body = append(body, exts...)
	msg := append([]byte{2, 0, byte(len(body) >> 8), byte(len(body))}, body...)
	rec := []byte{0x16, 3, 3}
	rec = binary.BigEndian.AppendUint16(rec, uint16(len(msg)))
	return append(rec, msg...)
}

// readRecord reads one whole TLS record.
func readRecord(r io.Reader) ([]byte, error) {
	hdr := make([]byte, 5)
	if _, err := io.ReadFull(r, hdr); err != nil {
		return nil, err
	}
	body := make([]byte, binary.BigEndian.Uint16(hdr[3:]))
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, err
	}
	return append(hdr, body...), nil
}

// TestSNICheckAfterHelloRetryRequest: when the server answers the first
// ClientHello with a HelloRetryRequest, the client sends a second
// ClientHello, in the clear, and a server that serves many names (a CDN's
// front) may take the name from that one. A second ClientHello that names
// another host than the tunnel's is refused before it reaches upstream; one
// that names the same host, behind the change_cipher_spec record of the
// middlebox compatibility mode, passes.
func TestSNICheckAfterHelloRetryRequest(t *testing.T) {
	ccs := []byte{0x14, 3, 3, 0, 1, 1}
	tests := []struct {
		name     string
		second   []byte
		forwards bool
	}{
		{name: "second ClientHello names another host", second: cat(ccs, clientHello(t, "evil.test"))},
		{name: "second ClientHello without CCS names another host", second: clientHello(t, "evil.test")},
		{name: "not a ClientHello after the retry", second: []byte("GET / HTTP/1.1\r\nHost: evil.test\r\n\r\n")},
		{name: "second ClientHello names the same host", second: cat(ccs, clientHello(t, "a.test")), forwards: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			after := make(chan []byte, 1)
			h.dial.serve = func(c net.Conn) {
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				if _, err := readRecord(c); err != nil {
					after <- nil
					return
				}
				c.Write(helloRetryRecord())
				c.SetReadDeadline(time.Now().Add(time.Second))
				b, _ := io.ReadAll(c)
				after <- b
			}
			c := h.conn()
			socksOpen(t, c, socksName("a.test", 443))
			c.Write(clientHello(t, "a.test"))
			hrr, err := readRecord(c)
			if err != nil || !bytes.Equal(hrr, helloRetryRecord()) {
				t.Fatalf("reading the HelloRetryRequest through the tunnel: %q, %v", hrr, err)
			}
			c.Write(tt.second)
			c.CloseWrite()
			io.ReadAll(c)
			got := <-after
			if !tt.forwards && bytes.Contains(got, []byte("evil.test")) {
				t.Fatalf("upstream got what the client sent after the retry, naming evil.test (%d bytes)", len(got))
			}
			d := h.next()
			if d.Allowed != tt.forwards {
				t.Fatalf("Decision = %+v, want allowed %v", d, tt.forwards)
			}
			if !tt.forwards {
				if !strings.Contains(d.Reason, "refused after connect") {
					t.Errorf("reason %q", d.Reason)
				}
				return
			}
			if !bytes.Equal(got, tt.second) {
				t.Fatalf("upstream got %d bytes, want the %d of the second flight", len(got), len(tt.second))
			}
		})
	}
}

// TestHelloRetryRequestHandshake: a real TLS 1.3 handshake in which the
// server asks for another key share completes through the proxy.
func TestHelloRetryRequestHandshake(t *testing.T) {
	ca := egresstest.NewCA(t, "a.test")
	h := newHarness(t, nil)
	h.dial.serve = func(c net.Conn) {
		defer c.Close()
		s := tls.Server(c, &tls.Config{
			Certificates:     []tls.Certificate{ca.Leaf()},
			MinVersion:       tls.VersionTLS13,
			CurvePreferences: []tls.CurveID{tls.CurveP256},
		})
		if s.Handshake() == nil {
			io.WriteString(s, "hello")
		}
	}
	c := h.conn()
	socksOpen(t, c, socksName("a.test", 443))
	tc := tls.Client(c, &tls.Config{
		ServerName:       "a.test",
		RootCAs:          ca.Pool(),
		CurvePreferences: []tls.CurveID{tls.X25519, tls.CurveP256},
	})
	b, err := io.ReadAll(tc)
	if err != nil || string(b) != "hello" {
		t.Fatalf("through the tunnel: %q, %v", b, err)
	}
	if d := h.next(); !d.Allowed {
		t.Fatalf("Decision = %+v", d)
	}
}

// TestSNICheckRefusesBytesAfterTheClientHello: a record that holds a
// second ClientHello after the checked one is refused before it reaches
// upstream. A server that answers the first with a HelloRetryRequest reads
// the next handshake message from the rest of that record, a ClientHello
// the proxy never checked.
func TestSNICheckRefusesBytesAfterTheClientHello(t *testing.T) {
	first, second := clientHello(t, "a.test"), clientHello(t, "evil.test")
	body := cat(first[5:], second[5:])
	rec := binary.BigEndian.AppendUint16([]byte{0x16, 3, 1}, uint16(len(body)))
	rec = append(rec, body...)

	h := newHarness(t, nil)
	got := make(chan []byte, 1)
	h.dial.serve = func(c net.Conn) {
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(time.Second))
		b, _ := io.ReadAll(c)
		got <- b
	}
	c := h.conn()
	socksOpen(t, c, socksName("a.test", 443))
	c.Write(rec)
	c.CloseWrite()
	io.ReadAll(c)
	if b := <-got; bytes.Contains(b, []byte("evil.test")) {
		t.Fatalf("upstream got a ClientHello naming evil.test behind the checked one (%d bytes)", len(b))
	}
	if d := h.next(); d.Allowed || !strings.Contains(d.Reason, "refused after connect") {
		t.Fatalf("Decision = %+v, want refused after connect", d)
	}
}

// TestSecondHelloRetryRequestRefused: RFC 8446 allows one retry; a server
// that asks again would read a third ClientHello, so the tunnel ends there.
func TestSecondHelloRetryRequestRefused(t *testing.T) {
	h := newHarness(t, nil)
	h.dial.serve = func(c net.Conn) {
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		for range 2 {
			if _, err := readRecord(c); err != nil {
				return
			}
			c.Write(helloRetryRecord())
		}
		io.ReadAll(c)
	}
	c := h.conn()
	socksOpen(t, c, socksName("a.test", 443))
	c.Write(clientHello(t, "a.test"))
	readRecord(c)
	c.Write(clientHello(t, "a.test"))
	c.CloseWrite()
	io.ReadAll(c)
	if d := h.next(); d.Allowed || !strings.Contains(d.Reason, "second HelloRetryRequest") {
		t.Fatalf("Decision = %+v, want refused for a second retry", d)
	}
}
