package egress

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Limits on the ClientHello the proxy reads on port 443 before opening the
// tunnel (a ClientHello with post-quantum key shares is about 2 KiB, and it
// must come in one record of at most 16 KiB), and on the records of the
// server's first handshake message (relayServerHello).
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
//
// The ClientHello must fill its record exactly: one cut into several
// records reads as another message to a front that routes TLS by its
// server name without terminating it and parses the byte stream as it
// comes (HAProxy's req.ssl_sni does), the later records' headers inside
// the message, where a cut inside an extension shifts the rest by five
// bytes and can show it a server_name the proxy never saw. Clients cut
// a ClientHello only past a record's 16 KiB.
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
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, "", fmt.Errorf("reading a TLS record header: %w", err)
	}
	n := int(binary.BigEndian.Uint16(hdr[3:]))
	if hdr[1] != 3 || n == 0 || n > 1<<14 {
		return nil, "", fmt.Errorf("record header % x: %w", hdr, errBadHello)
	}
	raw = make([]byte, 5+n)
	copy(raw, hdr[:])
	if _, err := io.ReadFull(r, raw[5:]); err != nil {
		return nil, "", fmt.Errorf("reading a TLS record: %w", err)
	}
	msg := raw[5:]
	if len(msg) < 4 {
		return nil, "", fmt.Errorf("a ClientHello's header cut across records: %w", errBadHello)
	}
	if msg[0] != 1 {
		return nil, "", fmt.Errorf("first handshake message is type %d: %w", msg[0], errBadHello)
	}
	l := int(msg[1])<<16 | int(msg[2])<<8 | int(msg[3])
	switch {
	case l > maxHelloBytes:
		return nil, "", fmt.Errorf("ClientHello of %d bytes: %w", l, errBadHello)
	case len(msg) < 4+l:
		return nil, "", fmt.Errorf("a ClientHello of %d bytes in a record of %d: one cut across records reads otherwise to a front that parses the stream: %w", l, n, errBadHello)
	case len(msg) > 4+l:
		// Nothing may follow the ClientHello in its record: a server
		// that answers with a HelloRetryRequest would read its next
		// ClientHello from there, unchecked.
		return nil, "", fmt.Errorf("%d bytes after the ClientHello in its record: %w", len(msg)-4-l, errBadHello)
	}
	sni, err = helloServerName(msg[4:])
	if err != nil {
		return nil, "", err
	}
	return raw, sni, nil
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
// its host_name server name (RFC 6066 §3), "" when there is none. The
// fields before the extensions must be as TLS 1.0 to 1.3 allow them: a
// front that routes TLS by its server name checks them before it looks
// for the name (HAProxy's req.ssl_sni wants a legacy_version of TLS 1.0
// or later, a session id of at most 32 bytes, a cipher suite and a
// compression method) and sends a ClientHello it cannot read to its
// default site, while a lenient server there may take it.
func helloServerName(body []byte) (string, error) {
	c := &cursor{b: body, ok: true}
	version := c.u16()                  // legacy_version
	c.bytes(32)                         // random
	session := len(c.bytes(c.u8()))     // legacy_session_id
	suites := len(c.bytes(c.u16()))     // cipher_suites
	compression := len(c.bytes(c.u8())) // legacy_compression_methods
	switch {
	case !c.ok:
		return "", fmt.Errorf("ClientHello header: %w", errBadHello)
	case version>>8 != 3 || version&0xff < 1:
		return "", fmt.Errorf("ClientHello legacy_version %#04x, before TLS 1.0: %w", version, errBadHello)
	case session > 32:
		return "", fmt.Errorf("ClientHello session id of %d bytes: %w", session, errBadHello)
	case suites < 2 || suites%2 != 0:
		return "", fmt.Errorf("ClientHello cipher suites of %d bytes: %w", suites, errBadHello)
	case compression < 1:
		return "", fmt.Errorf("ClientHello without a compression method: %w", errBadHello)
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

// hrrRandom is the ServerHello.random that marks a HelloRetryRequest
// (RFC 8446 §4.1.3): SHA-256 of "HelloRetryRequest".
var hrrRandom = [32]byte{
	0xcf, 0x21, 0xad, 0x74, 0xe5, 0x9a, 0x61, 0x11, 0xbe, 0x1d, 0x8c, 0x02, 0x1e, 0x65, 0xb8, 0x91,
	0xc2, 0xa2, 0x11, 0x16, 0x7a, 0xbb, 0x8c, 0x5e, 0x07, 0x9e, 0x09, 0xe2, 0xc8, 0xa8, 0x33, 0x9c,
}

// Limits on the records the proxy reads after a HelloRetryRequest: the
// change_cipher_spec record of the middlebox compatibility mode and the
// early data a client sent before the retry came (which the server skips),
// each relayed upstream as it is read.
const (
	maxSkippedRecords = 64
	maxRecordBytes    = 1<<14 + 256 // TLSCiphertext's largest fragment
	maxHelloRetries   = 1           // RFC 8446 §4.1.4: a second one is an error
)

// retryHelloBytes is what one checked ClientHello after a retry may cost
// the handshake reader, with the records skipped before it.
const retryHelloBytes = maxHelloBytes + 5*maxHelloRecords + maxSkippedRecords*(5+maxRecordBytes)

// relayServerHello copies the server's records to the client, one whole
// record at a time, until it has seen the start of the server's first
// handshake message (after any change_cipher_spec record), and reports
// whether that message is a HelloRetryRequest: a ServerHello whose random
// is hrrRandom. A server that speaks no TLS, an alert, or a read or write
// that fails ends the copy with retry false and no error: the relay carries
// the rest, and nothing of the client's goes upstream unchecked before it.
func relayServerHello(up io.Reader, c io.Writer) (retry bool, err error) {
	var msg []byte // the first bytes of the first handshake message
	for records := 0; records < maxHelloRecords+1; records++ {
		var hdr [5]byte
		n, err := io.ReadFull(up, hdr[:])
		if err != nil {
			c.Write(hdr[:n])
			return false, nil
		}
		if _, err := c.Write(hdr[:]); err != nil {
			return false, nil
		}
		typ, size := hdr[0], int(binary.BigEndian.Uint16(hdr[3:]))
		if hdr[1] != 3 || typ != 0x16 && !(typ == 0x14 && len(msg) == 0) {
			return false, nil // not TLS, or an alert: the relay copies the rest
		}
		body := make([]byte, size)
		n, err = io.ReadFull(up, body)
		if _, werr := c.Write(body[:n]); err != nil || werr != nil {
			return false, nil
		}
		if typ == 0x14 {
			continue
		}
		msg = append(msg, body[:min(len(body), 38-len(msg))]...)
		switch {
		case len(msg) > 0 && msg[0] != 2:
			return false, nil // not a ServerHello; the client will refuse it
		case len(msg) == 38:
			return [32]byte(msg[6:38]) == hrrRandom, nil
		}
	}
	return false, fmt.Errorf("the server's first handshake message came in too many records: %w", errBadHello)
}

// readRetryHello reads what a client sends after a HelloRetryRequest: at
// most maxSkippedRecords change_cipher_spec and application_data (early
// data) records, each written to up as it is read, then a ClientHello,
// whose bytes and server name it returns. Anything else is an error: a
// client that retries sends a ClientHello.
func readRetryHello(br *bufio.Reader, up io.Writer) (raw []byte, sni string, err error) {
	for skipped := 0; ; skipped++ {
		hdr, err := br.Peek(5)
		if err != nil {
			return nil, "", fmt.Errorf("waiting for the ClientHello after a HelloRetryRequest: %w", err)
		}
		if (hdr[0] != 0x14 && hdr[0] != 0x17) || hdr[1] != 3 {
			break
		}
		if skipped == maxSkippedRecords {
			return nil, "", fmt.Errorf("more than %d records before the ClientHello after a HelloRetryRequest: %w", maxSkippedRecords, errBadHello)
		}
		size := int(binary.BigEndian.Uint16(hdr[3:]))
		if size > maxRecordBytes {
			return nil, "", fmt.Errorf("a record of %d bytes before the ClientHello after a HelloRetryRequest: %w", size, errBadHello)
		}
		rec := make([]byte, 5+size)
		if _, err := io.ReadFull(br, rec); err != nil {
			return nil, "", fmt.Errorf("reading a TLS record: %w", err)
		}
		if _, err := up.Write(rec); err != nil {
			return nil, "", fmt.Errorf("writing a TLS record upstream: %w", err)
		}
	}
	raw, sni, err = readClientHello(br)
	if err == nil && raw == nil {
		err = fmt.Errorf("after a HelloRetryRequest the client sent no ClientHello: %w", errBadHello)
	}
	return raw, sni, err
}
