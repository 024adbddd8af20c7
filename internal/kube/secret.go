package kube

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/airlockhq/airlock/internal/kube/kubereq"
)

// credentials are a session's tool-server token and TLS certificate; the
// key goes only into the Secret the pod mounts.
type credentials struct {
	token    string
	certPEM  []byte
	keyPEM   []byte
	clientTC *tls.Config // trusts exactly certPEM, as ServerName
	notAfter time.Time   // the certificate's end
}

// newCredentials makes a random token and a self-signed certificate for
// ServerName valid until an hour after expires.
func newCredentials(expires time.Time) (*credentials, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	return selfSigned(hex.EncodeToString(b), key, expires)
}

// selfSigned is token with a self-signed certificate of priv for
// ServerName, valid until an hour after expires.
func selfSigned(token string, priv crypto.Signer, expires time.Time) (*credentials, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	if err != nil {
		return nil, err
	}
	tpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: ServerName},
		DNSNames:     []string{ServerName},
		NotBefore:    time.Now().Add(-5 * time.Minute),
		NotAfter:     expires.Add(time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, priv.Public(), priv)
	if err != nil {
		return nil, err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, err
	}
	c := &credentials{
		token:    token,
		certPEM:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:   pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}),
		notAfter: tpl.NotAfter,
	}
	if c.clientTC, err = clientTLS(c.certPEM); err != nil {
		return nil, err
	}
	return c, nil
}

// credentialsFrom reads the token and certificate of an existing Secret's
// data (a warm pool's).
func credentialsFrom(name string, data map[string][]byte) (*credentials, error) {
	tok, cert := data[keyToken], data[keyCert]
	if len(tok) < 16 || len(cert) == 0 {
		return nil, fmt.Errorf("the Secret %s needs the keys %q (at least 16 characters) and %q", name, keyToken, keyCert)
	}
	tc, err := clientTLS(cert)
	if err != nil {
		return nil, fmt.Errorf("the Secret %s: %w", name, err)
	}
	c := &credentials{token: string(trimSpace(tok)), certPEM: cert, clientTC: tc}
	if b, _ := pem.Decode(cert); b != nil {
		if x, err := x509.ParseCertificate(b.Bytes); err == nil {
			c.notAfter = x.NotAfter
		}
	}
	return c, nil
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == ' ' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

func clientTLS(certPEM []byte) (*tls.Config, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(certPEM) {
		return nil, errors.New("no PEM certificate under " + keyCert)
	}
	return &tls.Config{RootCAs: pool, ServerName: ServerName, MinVersion: tls.VersionTLS13}, nil
}

// keyedCredentials are a broker's session's token and TLS certificate,
// derived from the broker's session key (kubereq.NewKey) and the session
// id: the token is an HMAC of them, the certificate's Ed25519 key is made
// from another. A later connection of the session derives them again and
// takes up the session's Secret only if it holds the same (sameAs).
func keyedCredentials(key []byte, id string, expires time.Time) (*credentials, error) {
	if len(key) != kubereq.KeyLen {
		return nil, fmt.Errorf("a broker's session needs its %d-byte session key (the helper reads it on stdin)", kubereq.KeyLen)
	}
	tok, priv := deriveCredentials(key, id)
	return selfSigned(tok, priv, expires)
}

// deriveCredentials is the token and TLS key of session id under key.
func deriveCredentials(key []byte, id string) (string, ed25519.PrivateKey) {
	mac := func(what string) []byte {
		m := hmac.New(sha256.New, key)
		m.Write([]byte("airlock-kube " + what + " " + id))
		return m.Sum(nil)
	}
	return hex.EncodeToString(mac("token")), ed25519.NewKeyFromSeed(mac("tls key"))
}

// sameAs reports whether c (read from the session's Secret) holds the
// token and certificate key that key derives for session id.
func (c *credentials) sameAs(key []byte, id string) bool {
	tok, priv := deriveCredentials(key, id)
	if subtle.ConstantTimeCompare([]byte(tok), []byte(c.token)) != 1 {
		return false
	}
	b, _ := pem.Decode(c.certPEM)
	if b == nil {
		return false
	}
	x, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return false
	}
	pub, ok := x.PublicKey.(ed25519.PublicKey)
	return ok && pub.Equal(priv.Public())
}
