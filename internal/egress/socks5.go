package egress

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/netip"

	"github.com/airlockhq/airlock/internal/printable"
)

// The SOCKS5 subset (RFC 1928) spoken here:
//
//	client                                   proxy
//	05 n m1..mn            (greeting)   →
//	                                    ←    05 00   (no auth; or 05 FF, close)
//	05 01 00 atyp addr port (CONNECT)   →
//	                                          checks, resolve, dial
//	                                    ←    05 rep 00 01 0.0.0.0 0   (rep 00 only after a dial succeeded)
//	tunnel bytes                        ↔
//
// Version other than 5: close without a reply. CMD other than CONNECT, or a
// non-zero RSV byte: REP 07. Every refusal, whatever its reply (none
// included), is reported as a Decision, as the HTTP side's are. ATYP other than 1, 3, 4: REP 08. A malformed
// name or port 0: REP 01. Not granted: REP 02. Name did not resolve: REP 04.
// Dial refused: 05; network unreachable: 03; host unreachable or timeout: 04;
// any other dial error: 01. The bound address in every reply is 0.0.0.0:0,
// so the broker's own address never reaches the sandbox.
const (
	socksVersion      = 0x05
	socksNoAuth       = 0x00
	socksNoMethod     = 0xff
	socksConnect      = 0x01
	socksBind         = 0x02
	socksUDPAssociate = 0x03

	atypIPv4   = 0x01
	atypDomain = 0x03
	atypIPv6   = 0x04

	repSuccess         = 0x00
	repGeneral         = 0x01
	repNotAllowed      = 0x02
	repNetUnreachable  = 0x03
	repHostUnreachable = 0x04
	repRefused         = 0x05
	repCmdUnsupported  = 0x07
	repAtypUnsupported = 0x08
)

func socksReply(w io.Writer, rep byte) error {
	_, err := w.Write([]byte{socksVersion, rep, 0, atypIPv4, 0, 0, 0, 0, 0, 0})
	return err
}

func socksRep(f fail) byte {
	switch f {
	case failBad:
		return repGeneral
	case failDenied:
		return repNotAllowed
	case failResolve:
		return repHostUnreachable
	case failRefused:
		return repRefused
	case failNetUnreach:
		return repNetUnreachable
	case failHostUnreach:
		return repHostUnreachable
	}
	return repGeneral
}

func (p *Proxy) socks5(ctx context.Context, c net.Conn, br *bufio.Reader, hr *handshakeReader) {
	t, rep, why, ok := socksHandshake(c, br)
	if !ok {
		if rep != 0 {
			socksReply(c, rep)
		}
		p.decide(Decision{Proto: "socks5", Reason: why})
		return
	}
	if rep != repSuccess {
		socksReply(c, rep)
		p.decide(Decision{Proto: "socks5", Host: t.host, Port: t.port, Reason: "malformed request"})
		return
	}
	up, d, f := p.open(ctx, "socks5", t)
	if f != failNone {
		socksReply(c, socksRep(f))
		p.decide(d)
		return
	}
	defer closeOnEnd(ctx, up)()
	if err := socksReply(c, repSuccess); err != nil {
		up.Close()
		d.Allowed, d.Reason = false, "client went away before the reply"
		p.decide(d)
		return
	}
	p.tunnel(c, up, br, hr, t, d)
}

// socksHandshake reads the greeting and the request. ok false means stop:
// send rep if it is non-zero and close; why says what was refused, for the
// Decision. ok true with rep != 0 means the request was well-framed but its
// target is malformed (t holds what was read).
func socksHandshake(w io.Writer, br *bufio.Reader) (t target, rep byte, why string, ok bool) {
	const malformed = "malformed request"
	var hdr [2]byte
	if _, err := io.ReadFull(br, hdr[:]); err != nil || hdr[0] != socksVersion {
		return t, 0, malformed, false
	}
	methods := make([]byte, hdr[1])
	if _, err := io.ReadFull(br, methods); err != nil {
		return t, 0, malformed, false
	}
	noAuth := false
	for _, m := range methods {
		noAuth = noAuth || m == socksNoAuth
	}
	if !noAuth {
		w.Write([]byte{socksVersion, socksNoMethod})
		return t, 0, "no authentication method the proxy speaks was offered (it takes none)", false
	}
	if _, err := w.Write([]byte{socksVersion, socksNoAuth}); err != nil {
		return t, 0, "client went away before the reply", false
	}

	var req [4]byte
	if _, err := io.ReadFull(br, req[:]); err != nil || req[0] != socksVersion {
		return t, 0, malformed, false
	}
	switch {
	case req[1] == socksBind:
		return t, repCmdUnsupported, "SOCKS5 command BIND is not supported", false
	case req[1] == socksUDPAssociate:
		return t, repCmdUnsupported, "SOCKS5 command UDP ASSOCIATE is not supported", false
	case req[1] != socksConnect:
		return t, repCmdUnsupported, fmt.Sprintf("SOCKS5 command %d is not supported", req[1]), false
	case req[2] != 0:
		return t, repCmdUnsupported, "SOCKS5 reserved byte is not zero", false
	}
	var host string
	var ip netip.Addr
	switch req[3] {
	case atypIPv4:
		var b [4]byte
		if _, err := io.ReadFull(br, b[:]); err != nil {
			return t, 0, malformed, false
		}
		ip = netip.AddrFrom4(b)
	case atypIPv6:
		var b [16]byte
		if _, err := io.ReadFull(br, b[:]); err != nil {
			return t, 0, malformed, false
		}
		ip = netip.AddrFrom16(b).Unmap()
	case atypDomain:
		n, err := br.ReadByte()
		if err != nil {
			return t, 0, malformed, false
		}
		name := make([]byte, n)
		if _, err := io.ReadFull(br, name); err != nil {
			return t, 0, malformed, false
		}
		host = string(name)
	default:
		return t, repAtypUnsupported, fmt.Sprintf("SOCKS5 address type %d is not supported", req[3]), false
	}
	var pb [2]byte
	if _, err := io.ReadFull(br, pb[:]); err != nil {
		return t, 0, malformed, false
	}
	port := int(binary.BigEndian.Uint16(pb[:]))
	if ip.IsValid() {
		t = target{host: ip.String(), ip: ip, port: port}
		if port == 0 {
			return t, repGeneral, "", true
		}
		return t, repSuccess, "", true
	}
	pt, err := parseTarget(host, port)
	if err != nil {
		return target{host: loggable(host), port: port}, repGeneral, "", true
	}
	return pt, repSuccess, "", true
}

// loggable makes a client-sent name safe to log and to show: at most 255
// bytes of it, with control characters, invisible format characters and
// bytes that are not UTF-8 as visible escapes (printable.Line).
func loggable(s string) string {
	if len(s) > 255 {
		s = s[:255]
	}
	return printable.Line(s)
}
