package egress

import (
	"bufio"
	"crypto/ecdh"
	"crypto/rand"
	"crypto/tls"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/internal/egresstest"
)

// echConfig marshals an ECHConfig (draft-ietf-tls-esni, version 0xfe0d)
// for an X25519 key, HKDF-SHA256 and AES-128-GCM, naming publicName as the
// client-facing server: the name a client sends in its outer ClientHello.
func echConfig(pub []byte, publicName string) []byte {
	var c []byte
	c = append(c, 1)                             // config_id
	c = binary.BigEndian.AppendUint16(c, 0x0020) // DHKEM(X25519, HKDF-SHA256)
	c = binary.BigEndian.AppendUint16(c, uint16(len(pub)))
	c = append(c, pub...)
	c = binary.BigEndian.AppendUint16(c, 4)      // cipher_suites
	c = binary.BigEndian.AppendUint16(c, 0x0001) // HKDF-SHA256
	c = binary.BigEndian.AppendUint16(c, 0x0001) // AES-128-GCM
	c = append(c, 64)                            // maximum_name_length
	c = append(c, byte(len(publicName)))
	c = append(c, publicName...)
	c = binary.BigEndian.AppendUint16(c, 0) // no extensions
	cfg := binary.BigEndian.AppendUint16(nil, 0xfe0d)
	cfg = binary.BigEndian.AppendUint16(cfg, uint16(len(c)))
	return append(cfg, c...)
}

// TestSNICheckRefusesEncryptedClientHello: a tunnel to a.test:443 whose
// ClientHello names a.test outside and evil.test inside, encrypted (ECH), is
// refused before a byte goes upstream. Behind one address that serves both
// names (a CDN's front), the server takes the inner name: the tunnel checked
// for a.test would otherwise carry a TLS session with evil.test.
func TestSNICheckRefusesEncryptedClientHello(t *testing.T) {
	ca := egresstest.NewCA(t, "a.test", "evil.test")
	key, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	cfg := echConfig(key.PublicKey().Bytes(), "a.test")
	list := binary.BigEndian.AppendUint16(nil, uint16(len(cfg)))
	list = append(list, cfg...)

	h := newHarness(t, nil)
	upstream := make(chan string, 1)
	h.dial.serve = func(c net.Conn) {
		defer c.Close()
		s := tls.Server(c, &tls.Config{
			Certificates:             []tls.Certificate{ca.Leaf()},
			MinVersion:               tls.VersionTLS13,
			EncryptedClientHelloKeys: []tls.EncryptedClientHelloKey{{Config: cfg, PrivateKey: key.Bytes()}},
		})
		if err := s.Handshake(); err != nil {
			upstream <- "handshake failed: " + err.Error()
			return
		}
		name := s.ConnectionState().ServerName
		upstream <- name
		io.WriteString(s, name+"\n")
		s.Close()
	}
	c := h.conn()
	io.WriteString(c, "CONNECT a.test:443 HTTP/1.1\r\nHost: a.test:443\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("CONNECT: %v, %v", resp, err)
	}
	tc := tls.Client(&bufConn{Conn: c, r: br}, &tls.Config{
		ServerName:                     "evil.test",
		RootCAs:                        ca.Pool(),
		MinVersion:                     tls.VersionTLS13,
		EncryptedClientHelloConfigList: list,
	})
	if err := tc.Handshake(); err == nil {
		got, _ := bufio.NewReader(tc).ReadString('\n')
		t.Errorf("a tunnel checked for a.test carried a TLS session (ECH accepted %v) the server took as %q",
			tc.ConnectionState().ECHAccepted, strings.TrimSpace(got))
	}
	d := h.next()
	if d.Allowed || !strings.Contains(d.Reason, "Encrypted Client Hello") {
		t.Errorf("Decision = %+v, want a refusal naming Encrypted Client Hello", d)
	}
	select {
	case got := <-upstream:
		if !strings.HasPrefix(got, "handshake failed") {
			t.Errorf("upstream handshake with server name %q", got)
		}
	default:
	}
}

// bufConn reads through r, which may hold bytes already read from Conn.
type bufConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufConn) Read(b []byte) (int, error) { return c.r.Read(b) }
