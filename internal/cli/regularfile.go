package cli

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// readRegular reads the file path names (symlinks followed: a Kubernetes
// secret's mount is one) when it is a regular file of at most max bytes.
// It never waits: a FIFO or a device named by a flag (--token-file,
// --tls-key) is refused before it is opened, and checked again once open,
// where a plain read would hang airlock's start until a writer came.
func readRegular(path string, max int64) ([]byte, error) {
	if fi, err := os.Stat(path); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s)", path, fi.Mode().Type())
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s)", path, fi.Mode().Type())
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s holds more than %d bytes", path, max)
	}
	return b, nil
}

// Bounds of the files the flags name.
const (
	maxTokenFile = 64 << 10 // a token is tens of bytes
	maxPEMFile   = 1 << 20  // a certificate chain or a key
)

// loadKeyPair is tls.LoadX509KeyPair through readRegular.
func loadKeyPair(certFile, keyFile string) (certPEM, keyPEM []byte, err error) {
	if certPEM, err = readRegular(certFile, maxPEMFile); err != nil {
		return nil, nil, err
	}
	if keyPEM, err = readRegular(keyFile, maxPEMFile); err != nil {
		return nil, nil, err
	}
	return certPEM, keyPEM, nil
}
