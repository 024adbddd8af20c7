//go:build unix

package cli

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestServeFilesNeverWait: a --token-file or --tls-key that is a FIFO (or
// another file that is not regular) is refused at once, naming it, where
// reading it hung airlock's start until a writer came; one past its bound
// is refused too, and a regular file behind a symlink (a Kubernetes
// secret's mount) is read.
func TestServeFilesNeverWait(t *testing.T) {
	dir := t.TempDir()
	noEnv := &Env{Getenv: func(string) string { return "" }}
	fifo := filepath.Join(dir, "token")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := serveToken(noEnv, fifo); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a FIFO token file: %v", err)
	}
	cert := filepath.Join(dir, "cert.pem")
	if err := os.WriteFile(cert, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := serveTLS(cert, fifo); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("a FIFO TLS key: %v", err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, make([]byte, maxTokenFile+1), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := serveToken(noEnv, big); err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("a token file past its bound: %v", err)
	}
	real := filepath.Join(dir, "real")
	if err := os.WriteFile(real, []byte("0123456789abcdef0123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if tok, _, err := serveToken(noEnv, link); err != nil || tok != "0123456789abcdef0123" {
		t.Errorf("a token file behind a symlink: %q, %v", tok, err)
	}
}
