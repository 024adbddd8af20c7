package egress

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
)

// ListenUnix creates the Unix socket a sandbox reaches this proxy through.
// The socket is bound under a temporary name in the same directory, given
// Options.SocketMode (0600 by default), and only then renamed to path, so
// nothing finds it at path before its mode is set. (Between bind and chmod the
// temporary name has the mode the process umask gives it.) An existing socket at path is
// replaced; any other file there is an error. Closing the listener removes
// path.
func (p *Proxy) ListenUnix(path string) (net.Listener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != os.ModeSocket {
			return nil, fmt.Errorf("listening on %q: exists and is not a socket", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("removing stale socket %q: %w", path, err)
		}
	}
	var rnd [6]byte
	rand.Read(rnd[:])
	tmp := filepath.Join(filepath.Dir(path), ".egress-"+hex.EncodeToString(rnd[:]))
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: tmp, Net: "unix"})
	if err != nil {
		return nil, fmt.Errorf("listening on %q: %w", path, err)
	}
	l.SetUnlinkOnClose(false)
	if err := os.Chmod(tmp, p.o.SocketMode); err != nil {
		l.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("setting mode of %q: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		l.Close()
		os.Remove(tmp)
		return nil, fmt.Errorf("renaming %q to %q: %w", tmp, path, err)
	}
	return &unixListener{UnixListener: l, path: path}, nil
}

// unixListener removes its socket file once, on the first Close.
type unixListener struct {
	*net.UnixListener
	path string
	once sync.Once
}

func (l *unixListener) Close() error {
	err := l.UnixListener.Close()
	l.once.Do(func() { os.Remove(l.path) })
	return err
}

// Addr reports the final path, not the temporary name the socket was bound to.
func (l *unixListener) Addr() net.Addr { return &net.UnixAddr{Name: l.path, Net: "unix"} }
