//go:build !linux

package egress

import "net"

// firstBytes returns c unchanged: connections are handed over only on Linux
// (see package forward), so elsewhere every one is a byte stream.
func firstBytes(c net.Conn, _ int) (client net.Conn, first []byte, handed bool, err error) {
	return c, nil, false, nil
}
