package cli

import "github.com/airlockhq/airlock/internal/regularfile"

// Bounds of the files the flags name, read without waiting (a FIFO there
// hung airlock's start) and through symlinks (a Kubernetes secret's mount).
const (
	maxTokenFile = 64 << 10 // a token is tens of bytes
	maxPEMFile   = 1 << 20  // a certificate chain or a key
)

// readRegular reads a file a flag names (regularfile.Read, symlinks
// followed).
func readRegular(path string, max int64) ([]byte, error) {
	return regularfile.Read(path, max, true)
}

// loadKeyPair reads --tls-cert's and --tls-key's files (readRegular).
func loadKeyPair(certFile, keyFile string) (certPEM, keyPEM []byte, err error) {
	if certPEM, err = readRegular(certFile, maxPEMFile); err != nil {
		return nil, nil, err
	}
	if keyPEM, err = readRegular(keyFile, maxPEMFile); err != nil {
		return nil, nil, err
	}
	return certPEM, keyPEM, nil
}
