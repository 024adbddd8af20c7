package egress

import (
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
)

// streamSNI reads the server name of a ClientHello the way a front that
// routes TLS by it without terminating it may: HAProxy's req.ssl_sni
// (src/payload.c, smp_fetch_ssl_hello_sni) takes the first record's header
// and then parses the handshake message straight from the byte stream,
// headers of any further records included, and returns the name of the
// first server_name extension whose first entry is a host_name; none for
// a legacy_version below TLS 1.0 or a session id longer than 32 bytes.
func streamSNI(b []byte) string {
	if len(b) < 9 || b[0] != 0x16 || b[1] < 3 || b[5] != 1 {
		return ""
	}
	d := b[9:] // past the record header and the handshake header
	n := func(i, w int) int {
		v := 0
		for j := range w {
			v = v<<8 | int(d[i+j])
		}
		return v
	}
	if len(d) < 35 || d[0] < 3 || d[1] < 1 || d[34] > 32 {
		return ""
	}
	i := 35 + int(d[34]) // version, random, session id
	if len(d) < i+2 {
		return ""
	}
	i += 2 + n(i, 2) // cipher suites
	if len(d) < i+1 {
		return ""
	}
	i += 1 + int(d[i]) // compression methods
	if len(d) < i+2 {
		return ""
	}
	left := n(i, 2)
	i += 2
	for left >= 4 && len(d) >= i+4 {
		typ, size := n(i, 2), n(i+2, 2)
		if size > left-4 {
			return ""
		}
		if typ == 0 && len(d) >= i+9 && d[i+6] == 0 {
			if end := i + 9 + n(i+7, 2); end <= len(d) {
				return string(d[i+9 : end])
			}
			return ""
		}
		left -= 4 + size
		i += 4 + size
	}
	return ""
}

// splitHello returns a ClientHello for serverName in two records, cut
// inside an extension so that streamSNI, which reads the second record's
// header as part of the message, finds the first server_name extension in
// what a reader of records takes for the data of an unknown extension and
// of another after it: it names hidden, while the extension a reader of
// records finds names serverName.
func splitHello(serverName, hidden string) []byte {
	ext := func(typ int, data []byte) []byte {
		b := binary.BigEndian.AppendUint16(nil, uint16(typ))
		b = binary.BigEndian.AppendUint16(b, uint16(len(data)))
		return append(b, data...)
	}
	// Unknown extension 0xfafa, whose data ends with the header of a
	// server_name extension (type 0, 5 + len(hidden) bytes) and the first
	// byte of its list length, as a reader that is 5 bytes behind sees it.
	pad := make([]byte, 11)
	pad = append(pad, 0, 0, 0, byte(5+len(hidden)), 0)
	exts := ext(0xfafa, pad)
	// What such a reader takes for the rest of that server_name
	// extension: list length, host_name, name length, the name; to a
	// reader of records, an unknown extension holding the name.
	exts = append(exts, byte(3+len(hidden)), 0, 0, byte(len(hidden)))
	exts = append(exts, hidden...)
	sn := []byte{0, byte(3 + len(serverName)), 0, 0, byte(len(serverName))}
	exts = append(exts, ext(0, append(sn, serverName...))...)

	body := []byte{3, 3}
	body = append(body, make([]byte, 32)...)    // random
	body = append(body, 0, 0, 2, 0x13, 1, 1, 0) // no session id, one cipher suite, no compression
	body = binary.BigEndian.AppendUint16(body, uint16(len(exts)))
	body = append(body, exts...)
	msg := append([]byte{1, 0, byte(len(body) >> 8), byte(len(body))}, body...)

	cut := 4 + 2 + 32 + 1 + 4 + 2 + 2 + 4 + 4 // four bytes into the unknown extension's data
	record := func(p []byte) []byte {
		return append([]byte{0x16, 3, 1, byte(len(p) >> 8), byte(len(p))}, p...)
	}
	return append(record(msg[:cut]), record(msg[cut:])...)
}

// TestSNICheckClientHelloInOneRecord: a ClientHello cut into two records
// reads as two different messages: a server that terminates TLS joins the
// records' payloads, while a front that routes TLS by its server name
// without terminating it may parse the byte stream as it comes, the second
// record's header inside the message (HAProxy's req.ssl_sni does). Cut
// inside an extension, the bytes after the cut are shifted by five for
// such a front, which can then find a server_name extension naming
// evil.test where the proxy, which joins the payloads, finds unknown
// extensions and one naming a.test: a tunnel to a.test:443 reached
// evil.test behind the same front. A ClientHello must come in one record
// (clients split one only past 16 KiB), so that every reader reads the
// same message.
func TestSNICheckClientHelloInOneRecord(t *testing.T) {
	hello := splitHello("a.test", "evil.test")
	if got := streamSNI(hello); got != "evil.test" {
		t.Fatalf("the crafted ClientHello reads as %q to a front that parses the stream, want evil.test", got)
	}
	h := newHarness(t, nil)
	var mu sync.Mutex
	var routed []string
	h.dial.serve = func(c net.Conn) {
		defer c.Close()
		b, _ := io.ReadAll(io.LimitReader(c, int64(len(hello))))
		mu.Lock()
		routed = append(routed, streamSNI(b))
		mu.Unlock()
	}
	c := h.conn()
	socksOpen(t, c, socksName("a.test", 443))
	c.Write(hello)
	c.CloseWrite()
	io.ReadAll(c)
	d := h.next()
	h.stop()
	if d.Allowed {
		t.Errorf("a ClientHello in two records: Decision = %+v, want refused", d)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, name := range routed {
		if name == "evil.test" {
			t.Errorf("the front routed the tunnel to a.test:443 by the server name %q", name)
		}
	}
}
