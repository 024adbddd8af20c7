//go:build !linux

package egress

import (
	"context"
	"net"
	"time"
)

// firstBytes returns c unchanged: connections are handed over only on Linux
// (see package forward), so elsewhere every one is a byte stream.
func firstBytes(_ context.Context, c net.Conn, _ int, _ rightsBudget, _ time.Time) (client net.Conn, first []byte, handed bool, err error) {
	return c, nil, false, nil
}
