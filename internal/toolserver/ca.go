package toolserver

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"
)

// CAConfig returns the TLS configuration of a wss:// endpoint whose
// certificate the CA in pemFile signed, for Options.TLS.
func CAConfig(pemFile string) (*tls.Config, error) {
	pem, err := os.ReadFile(pemFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s holds no PEM certificate", pemFile)
	}
	return &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}
