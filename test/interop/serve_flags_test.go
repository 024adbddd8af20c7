package interop_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestServeRefusesUnsafeSettings checks serve's usage errors: no listen
// address, no token on a non-loopback address, and weak tokens. None of them
// may print the token it was given.
func TestServeRefusesUnsafeSettings(t *testing.T) {
	w := newWorkspace(t)
	short := filepath.Join(w.root, "short-token")
	if err := os.WriteFile(short, []byte("hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"no listen", nil, nil, "--listen ADDR is required"},
		{"no auth on all interfaces", []string{"--listen", "0.0.0.0:0", "--insecure-no-auth"}, nil, "--insecure-no-auth needs a loopback address"},
		{"no auth on a wildcard port", []string{"--listen", ":0", "--insecure-no-auth"}, nil, "--insecure-no-auth needs a loopback address"},
		{"short token file", []string{"--listen", "127.0.0.1:0", "--token-file", short}, nil, "shorter than 16"},
		{"short token env", []string{"--listen", "127.0.0.1:0"}, []string{"AIRLOCK_TOKEN=hunter2"}, "AIRLOCK_TOKEN: the token is shorter"},
		{"token with a space", []string{"--listen", "127.0.0.1:0"}, []string{"AIRLOCK_TOKEN=0123456789 abcdef0123"}, "printable ASCII"},
		{"missing token file", []string{"--listen", "127.0.0.1:0", "--token-file", filepath.Join(w.root, "nope")}, nil, "--token-file"},
		// Plain HTTP beyond loopback is refused before the port is opened.
		{"plain http on all interfaces", []string{"--listen", "0.0.0.0:0"}, nil, "not a loopback address: serve HTTPS with --tls-cert and --tls-key, or pass --insecure-plain-http"},
		{"plain http on a wildcard port", []string{"--listen", ":0"}, nil, "not a loopback address"},
		{"plain http on a name", []string{"--listen", "example.com:0"}, nil, "not a loopback address"},
		{"a cert without a key", []string{"--listen", "127.0.0.1:0", "--tls-cert", filepath.Join(w.root, "hello.txt")}, nil, "--tls-cert and --tls-key go together"},
		{"a cert that is not one", []string{"--listen", "127.0.0.1:0", "--tls-cert", filepath.Join(w.root, "hello.txt"), "--tls-key", filepath.Join(w.root, "hello.txt")}, nil, "--tls-cert"},
		{"an origin without a scheme", []string{"--listen", "127.0.0.1:0", "--allow-origin", "app.example"}, nil, "--allow-origin"},
		{"no connections", []string{"--listen", "127.0.0.1:0", "--max-connections", "0"}, nil, "--max-connections must be at least 1"},
		{"no sessions", []string{"--listen", "127.0.0.1:0", "--max-sessions", "0"}, nil, "--max-sessions must be at least 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, airlock(t), append([]string{"serve", "--root", w.root}, tc.args...)...)
			cmd.Env = append(append(os.Environ(), "AIRLOCK_STATE_DIR="+w.records), tc.env...)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 {
				t.Fatalf("exit %v, want 2; output:\n%s", err, out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Errorf("output lacks %q:\n%s", tc.want, out)
			}
			if strings.Contains(string(out), "hunter2") || strings.Contains(string(out), "0123456789 abcdef") {
				t.Errorf("the token leaked into the output:\n%s", out)
			}
			if strings.Contains(string(out), "serving MCP at") {
				t.Errorf("it served before refusing:\n%s", out)
			}
		})
	}
}

// TestServeTokens checks where serve's token comes from: a generated one is
// printed once and works; a token file works; no auth works on loopback.
func TestServeTokens(t *testing.T) {
	w := newWorkspace(t)
	status := func(url, token string) int {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	t.Run("generated", func(t *testing.T) {
		s := startServeEnv(t, w, []string{"AIRLOCK_TOKEN="})
		if len(s.lines) < 2 || !strings.Contains(s.lines[0], "no --token-file or AIRLOCK_TOKEN") || len(s.lines[1]) != 64 {
			t.Fatalf("want the generated token on the line after the notice, got %q", s.lines)
		}
		token := s.lines[1]
		if got := status(s.base+"/metrics", token); got != http.StatusOK {
			t.Errorf("/metrics with the generated token: %d", got)
		}
		if got := status(s.base+"/metrics", ""); got != http.StatusUnauthorized {
			t.Errorf("/metrics without it: %d", got)
		}
		s.stop(t, 10*time.Second)
	})
	t.Run("token file", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "token")
		if err := os.WriteFile(file, []byte("  file-token-0123456789abcdef\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		s := startServeEnv(t, w, []string{"AIRLOCK_TOKEN="}, "--token-file", file)
		if got := status(s.base+"/metrics", "file-token-0123456789abcdef"); got != http.StatusOK {
			t.Errorf("/metrics with the file's token: %d", got)
		}
		for _, l := range s.lines {
			if strings.Contains(l, "file-token") {
				t.Errorf("the token was printed: %q", l)
			}
		}
		s.stop(t, 10*time.Second)
	})
	t.Run("no auth on loopback", func(t *testing.T) {
		s := startServeEnv(t, w, nil, "--insecure-no-auth")
		if got := status(s.base+"/metrics", ""); got != http.StatusOK {
			t.Errorf("/metrics without a token: %d", got)
		}
		s.stop(t, 10*time.Second)
	})
}

// selfSigned writes a fresh self-signed certificate for 127.0.0.1 and its
// key to dir, and returns their paths and a pool trusting the certificate.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "airlock interop"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// TestServeTLS serves HTTPS with a self-signed certificate on 127.0.0.1: a
// client trusting it makes a call; plain HTTP to the port gets no MCP answer.
func TestServeTLS(t *testing.T) {
	w := newWorkspace(t)
	certFile, keyFile, pool := selfSigned(t, t.TempDir())
	s := startServe(t, w, "--tls-cert", certFile, "--tls-key", keyFile)
	if !strings.HasPrefix(s.url, "https://127.0.0.1:") {
		t.Fatalf("serve says it serves at %q, want https://127.0.0.1:PORT/mcp", s.url)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}
	defer tr.CloseIdleConnections()
	hc := &http.Client{Transport: &bearerOver{token: s.token, base: tr}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "go-client", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: s.url, HTTPClient: hc, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connecting over TLS: %v", err)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "hello.txt"}})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "hello from interop") {
		t.Fatalf("read_file over TLS: %v %v", res, err)
	}
	cs.Close()
	// The same port in plain HTTP: Go's server answers a plain request on a
	// TLS port with 400, never with MCP.
	plain := "http://" + strings.TrimPrefix(s.base, "https://") + "/healthz"
	if resp, err := http.Get(plain); err == nil {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			t.Errorf("plain HTTP on the TLS port: %d %q", resp.StatusCode, body)
		}
	}
	s.stop(t, 10*time.Second)
}

// bearerOver adds a bearer token to every request sent through base.
type bearerOver struct {
	token string
	base  http.RoundTripper
}

func (b *bearerOver) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}
