//go:build !linux

package egress

import "net"

// kernelUpload is Linux-only (BPF sockmap); elsewhere every tunnel is copied.
func (p *Proxy) kernelUpload(c, up net.Conn) (run func(*activity) error, stop func()) {
	return nil, nil
}
