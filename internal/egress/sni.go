package egress

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Limits on the ClientHello the proxy reads on port 443 before opening the
// tunnel. A ClientHello with post-quantum key shares is about 2 KiB.
const (
	maxHelloBytes   = 64 << 10
	maxHelloRecords = 16
)

var errBadHello = errors.New("malformed TLS ClientHello")

// Extensions that hide the server name the server will use: Encrypted
// Client Hello (draft-ietf-tls-esni, 0xfe0d) and its predecessor, encrypted
// SNI (0xffce). Behind an address that serves several names (a CDN's
// front), a ClientHello whose outer server_name is the checked host would
// reach the inner one, which the proxy cannot read. GREASE ECH, which
// Chromium sends by default, cannot be told from the real thing, so it is
// refused too.
const (
	extEncryptedClientHello = 0xfe0d
	extEncryptedServerName  = 0xffce
)

// readClientHello reads the first TLS handshake message from r if the client
// speaks TLS (first byte 0x16), and returns the bytes it consumed (to be
// forwarded verbatim) and the server_name it carries ("" if none). A client
// that does not start with a TLS handshake record is left untouched: raw is
// nil and nothing is consumed.
func readClientHello(r *bufio.Reader) (raw []byte, sni string, err error) {
	first, err := r.Peek(1)
	if err != nil {
		return nil, "", fmt.Errorf("waiting for the ClientHello: %w", err)
	}
	if first[0] != 0x16 {
		// Another TLS record before the ClientHello (change_cipher_spec,
		// alert, application_data, heartbeat) would carry a ClientHello
		// past the check to a server lenient enough to skip it.
		if first[0] >= 0x14 && first[0] <= 0x18 {
			if two, err := r.Peek(2); err == nil && two[1] == 3 {
				return nil, "", fmt.Errorf("a TLS record of type %d before the ClientHello: %w", first[0], errBadHello)
			}
		}
		return nil, "", nil
	}
	var msg []byte
	for records := 0; ; records++ {
		if records == maxHelloRecords {
			return nil, "", fmt.Errorf("ClientHello in too many records: %w", errBadHello)
		}
		var hdr [5]byte
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			return nil, "", fmt.Errorf("reading a TLS record header: %w", err)
		}
		raw = append(raw, hdr[:]...)
		n := int(binary.BigEndian.Uint16(hdr[3:]))
		if hdr[0] != 0x16 || hdr[1] != 3 || n == 0 || n > 1<<14 {
			return nil, "", fmt.Errorf("record header % x: %w", hdr, errBadHello)
		}
		start := len(raw)
		raw = append(raw, make([]byte, n)...)
		if _, err := io.ReadFull(r, raw[start:]); err != nil {
			return nil, "", fmt.Errorf("reading a TLS record: %w", err)
		}
		msg = append(msg, raw[start:]...)
		if len(msg) >= 4 {
			if msg[0] != 1 {
				return nil, "", fmt.Errorf("first handshake message is type %d: %w", msg[0], errBadHello)
			}
			l := int(msg[1])<<16 | int(msg[2])<<8 | int(msg[3])
			if l > maxHelloBytes {
				return nil, "", fmt.Errorf("ClientHello of %d bytes: %w", l, errBadHello)
			}
			if len(msg) >= 4+l {
				sni, err := helloServerName(msg[4 : 4+l])
				if err != nil {
					return nil, "", err
				}
				return raw, sni, nil
			}
		}
	}
}

// cursor reads big-endian fields from a byte slice; ok turns false on overrun.
type cursor struct {
	b  []byte
	ok bool
}

func (c *cursor) bytes(n int) []byte {
	if !c.ok || n > len(c.b) {
		c.ok = false
		return nil
	}
	v := c.b[:n]
	c.b = c.b[n:]
	return v
}

func (c *cursor) u8() int {
	b := c.bytes(1)
	if b == nil {
		return 0
	}
	return int(b[0])
}

func (c *cursor) u16() int {
	b := c.bytes(2)
	if b == nil {
		return 0
	}
	return int(binary.BigEndian.Uint16(b))
}

// helloServerName parses a ClientHello body (RFC 8446 §4.1.2) and returns
// its host_name server name (RFC 6066 §3), "" when there is none.
func helloServerName(body []byte) (string, error) {
	c := &cursor{b: body, ok: true}
	c.bytes(2 + 32)  // legacy_version, random
	c.bytes(c.u8())  // legacy_session_id
	c.bytes(c.u16()) // cipher_suites
	c.bytes(c.u8())  // legacy_compression_methods
	if !c.ok {
		return "", fmt.Errorf("ClientHello header: %w", errBadHello)
	}
	if len(c.b) == 0 {
		return "", nil // no extensions
	}
	exts := &cursor{b: c.bytes(c.u16()), ok: c.ok}
	if !exts.ok {
		return "", fmt.Errorf("extensions length: %w", errBadHello)
	}
	sni, seen := "", false
	for len(exts.b) > 0 {
		typ := exts.u16()
		data := exts.bytes(exts.u16())
		if !exts.ok {
			return "", fmt.Errorf("extension framing: %w", errBadHello)
		}
		if typ == extEncryptedClientHello || typ == extEncryptedServerName {
			return "", fmt.Errorf("the ClientHello uses Encrypted Client Hello (extension %#04x), whose server name cannot be checked", typ)
		}
		if typ != 0 {
			continue
		}
		if seen {
			return "", fmt.Errorf("two server_name extensions: %w", errBadHello)
		}
		seen = true
		d := &cursor{b: data, ok: true}
		list := &cursor{b: d.bytes(d.u16()), ok: d.ok}
		if !d.ok || len(d.b) != 0 {
			return "", fmt.Errorf("server_name list: %w", errBadHello)
		}
		for len(list.b) > 0 {
			nameType := list.u8()
			name := list.bytes(list.u16())
			if !list.ok {
				return "", fmt.Errorf("server_name entry: %w", errBadHello)
			}
			if nameType != 0 {
				continue
			}
			if sni != "" || len(name) == 0 {
				return "", fmt.Errorf("server_name host_name: %w", errBadHello)
			}
			sni = string(name)
		}
	}
	return sni, nil
}
