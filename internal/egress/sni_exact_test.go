package egress

import (
	"encoding/binary"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
)

// helloWithSNI returns a ClientHello in one record whose server_name is the
// bytes of name as they are, none when name is empty.
func helloWithSNI(name string) []byte { return helloWith(name, 0x0303, 0) }

// helloWith is helloWithSNI with the ClientHello's legacy_version and a
// legacy_session_id of idLen bytes.
func helloWith(name string, version uint16, idLen int) []byte {
	var exts []byte
	if name != "" {
		list := append([]byte{0}, binary.BigEndian.AppendUint16(nil, uint16(len(name)))...)
		list = append(list, name...)
		data := binary.BigEndian.AppendUint16(nil, uint16(len(list)))
		data = append(data, list...)
		exts = binary.BigEndian.AppendUint16(exts, 0)
		exts = binary.BigEndian.AppendUint16(exts, uint16(len(data)))
		exts = append(exts, data...)
	}
	body := binary.BigEndian.AppendUint16(nil, version)
	body = append(body, make([]byte, 32)...)
	body = append(body, byte(idLen))
	body = append(body, make([]byte, idLen)...)
	body = append(body, 0, 2, 0x13, 1, 1, 0)
	body = binary.BigEndian.AppendUint16(body, uint16(len(exts)))
	body = append(body, exts...)
	msg := append([]byte{1, 0, byte(len(body) >> 8), byte(len(body))}, body...)
	return append([]byte{0x16, 3, 1, byte(len(msg) >> 8), byte(len(msg))}, msg...)
}

// TestSNICheckNamesTheHostAsAFrontMatchesIt: a front that routes TLS by
// its server name without terminating it (HAProxy's req.ssl_sni, sniproxy)
// compares the bytes it is sent with the names it serves, and sends a
// ClientHello that names none of them (or no server at all) to its default
// site, which may be another than the one granted. The proxy took a
// ClientHello without a server name, and one whose name normalises to the
// checked host but is not spelled as it (a trailing dot, a fullwidth
// letter or a soft hyphen, which IDNA mapping removes), for the checked
// host: a tunnel to a.test:443 reached the front's default site. For a
// tunnel to a name, the server name must be that name as RFC 6066 writes
// it (ASCII, no trailing dot; letters in either case).
func TestSNICheckNamesTheHostAsAFrontMatchesIt(t *testing.T) {
	for _, tt := range []struct {
		sni     string
		hello   []byte
		allowed bool
	}{
		{"a.test", nil, true},
		{"A.Test", nil, true},
		{"", nil, false},
		{"a.test.", nil, false},
		{"\uff41.test", nil, false}, // fullwidth a
		{"a.te\u00adst", nil, false},
		// Fields such a front checks before it looks for the name, and
		// that a lenient server behind it may not: a ClientHello the
		// front cannot read goes to its default site too.
		{"a.test (SSL 3.0 legacy_version)", helloWith("a.test", 0x0300, 0), false},
		{"a.test (33-byte session id)", helloWith("a.test", 0x0303, 33), false},
	} {
		hello := tt.hello
		if hello == nil {
			hello = helloWithSNI(tt.sni)
		}
		h := newHarness(t, nil)
		var mu sync.Mutex
		var routed []string
		h.dial.serve = func(c net.Conn) {
			defer c.Close()
			b, _ := io.ReadAll(io.LimitReader(c, int64(len(hello))))
			if len(b) == 0 {
				return // refused: nothing reached the front
			}
			site := "default"
			if name := streamSNI(b); asciiLower(name) == "a.test" {
				site = "a.test"
			}
			mu.Lock()
			routed = append(routed, site)
			mu.Unlock()
		}
		c := h.conn()
		socksOpen(t, c, socksName("a.test", 443))
		c.Write(hello)
		c.CloseWrite()
		io.ReadAll(c)
		d := h.next()
		h.stop()
		if d.Allowed != tt.allowed {
			t.Errorf("server name %q: Decision = %+v, want allowed %v", tt.sni, d, tt.allowed)
		}
		mu.Lock()
		for _, site := range routed {
			if site != "a.test" {
				t.Errorf("server name %q: a tunnel to a.test:443 reached the front's %s site", tt.sni, site)
			}
		}
		mu.Unlock()
	}
}

// asciiLower lowercases ASCII letters only, as a front comparing names
// case-insensitively does.
func asciiLower(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, s)
}
