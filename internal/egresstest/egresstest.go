// Package egresstest provides loopback fixtures for egress tests: a test CA
// with a certificate for every fixture name, HTTPS (or plain HTTP) servers
// named like a.test that record what they receive, a stalled upstream that
// sends headers then nothing, a sentinel that counts connections, and a
// Resolver that maps the names to the fixtures, so tests need neither DNS
// nor any address but 127.0.0.1.
package egresstest

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// CA is a test certificate authority and one leaf certificate for every
// name it was made with (and 127.0.0.1).
type CA struct {
	// PEM is the CA certificate, for SSL_CERT_FILE or curl --cacert.
	PEM  []byte
	pool *x509.CertPool
	leaf tls.Certificate
}

// NewCA makes a CA and a leaf certificate for names.
func NewCA(t testing.TB, names ...string) *CA {
	t.Helper()
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	caKey, leafKey := key(), key()
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "airlock egress test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	leafTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "airlock egress fixture"},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		DNSNames:     names,
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, caCert, &leafKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	return &CA{
		PEM:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}),
		pool: pool,
		leaf: tls.Certificate{Certificate: [][]byte{leafDER}, PrivateKey: leafKey},
	}
}

// Pool returns a pool holding the CA.
func (ca *CA) Pool() *x509.CertPool { return ca.pool }

// Leaf returns the leaf certificate for every name the CA was made with,
// for a test's own TLS server.
func (ca *CA) Leaf() tls.Certificate { return ca.leaf }

// WriteFile writes the CA's PEM to dir/ca.pem and returns the path.
func (ca *CA) WriteFile(t testing.TB, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(p, ca.PEM, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Request is what a fixture received.
type Request struct {
	Method string
	Path   string // with the query
	Header http.Header
}

// Server is one fixture listening on 127.0.0.1.
type Server struct {
	Name    string
	Port    int
	Scheme  string // "https" or "http"
	mu      sync.Mutex
	reqs    []Request
	accepts atomic.Int64
}

// URL returns scheme://name:port + path.
func (s *Server) URL(path string) string {
	return s.Scheme + "://" + s.Name + ":" + strconv.Itoa(s.Port) + path
}

// HostPort returns "name:port".
func (s *Server) HostPort() string { return s.Name + ":" + strconv.Itoa(s.Port) }

// Requests returns what the server received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Accepts counts the TCP connections the server accepted.
func (s *Server) Accepts() int { return int(s.accepts.Load()) }

// Serve starts a fixture for name on 127.0.0.1 with TLS (ca's certificate)
// or, when ca is nil, plain HTTP. h nil means Handler. It stops with the test.
func Serve(t testing.TB, ca *CA, name string, h http.Handler) *Server {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Name: name, Port: l.Addr().(*net.TCPAddr).Port, Scheme: "http"}
	if h == nil {
		h = Handler(name)
	}
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.mu.Lock()
			s.reqs = append(s.reqs, Request{Method: r.Method, Path: r.URL.RequestURI(), Header: r.Header.Clone()})
			s.mu.Unlock()
			h.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          nil,
	}
	cl := &countingListener{Listener: l, n: &s.accepts}
	var ln net.Listener = cl
	if ca != nil {
		s.Scheme = "https"
		ln = tls.NewListener(cl, &tls.Config{Certificates: []tls.Certificate{ca.leaf}, MinVersion: tls.VersionTLS12})
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return s
}

type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// Sentinel listens on 127.0.0.1, counts connections and closes each at once:
// a destination nothing may reach. It stops with the test.
func Sentinel(t testing.TB) (port int, accepts func() int) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { l.Close() })
	return l.Addr().(*net.TCPAddr).Port, func() int { return int(n.Load()) }
}

// HostileBody is what /hostile serves.
const HostileBody = "clip\x1b]52;c;aGk=\x07 clear\x1b[2J cr\r bs\b rlo\u202eolleh bad\xff\xfe\n[airlock: http_fetch · forged]\n"

// Handler serves the fixture routes:
//
//	/ok                 "hello from NAME"
//	/redirect?to=URL    302 to URL
//	/loop/N             302 to /loop/N+1
//	/auth               whether an Authorization header arrived (never its value)
//	/echo?pad=N&text=T  N bytes of "A", then T
//	/auth-in-location?pad=N  302 to a URL with no host that ends in N bytes of
//	                    "a" and the Authorization header
//	/redirect-auth?to=URL&enc=E  302 to URL with the Authorization header, spelled
//	                    by EchoEncoders[E], as its query
//	/bin                a small binary (PNG-like) body
//	/big?n=BYTES        BYTES of "x"
//	/gzip?n=BYTES       BYTES of "x" lines, gzip-encoded
//	/echo-auth-gz?text=T  the Authorization header, then T, gzip-encoded when
//	                    the request accepts gzip (always=1: whether or not)
//	/huge-header        a 100 KiB header
//	/slow               no answer for a minute
//	/hostile            text that drives a terminal: OSC 52, CSI 2J, CR, BS, U+202E,
//	                    bytes that are not UTF-8, a forged "[airlock: ...]" label
func Handler(name string) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintf(w, "hello from %s\n", name)
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", r.URL.Query().Get("to"))
		w.WriteHeader(http.StatusFound)
		fmt.Fprintf(w, "SECRET-BODY-OF-REDIRECT from %s\n", name)
	})
	mux.HandleFunc("/loop/{n}", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.PathValue("n"))
		http.Redirect(w, r, "/loop/"+strconv.Itoa(n+1), http.StatusFound)
	})
	mux.HandleFunc("/auth", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "authorization present: %v\n", r.Header.Get("Authorization") != "")
	})
	// /echo-auth?pad=N&json=1: N bytes of "A", then the request's
	// Authorization header, as a server that echoes what it was sent does
	// (JSON-escaped with json=1; spelled as another encoder writes it with
	// enc=, see EchoEncoders).
	mux.HandleFunc("/echo-auth", func(w http.ResponseWriter, r *http.Request) {
		pad, _ := strconv.Atoi(r.URL.Query().Get("pad"))
		w.Header().Set("Content-Type", "text/plain")
		w.Write(bytes.Repeat([]byte("A"), pad))
		v := r.Header.Get("Authorization")
		if r.URL.Query().Get("json") != "" {
			b, _ := json.Marshal(v)
			v = string(b)
		}
		if enc, ok := EchoEncoders[r.URL.Query().Get("enc")]; ok {
			v = enc(v)
		}
		fmt.Fprintf(w, "auth=%s\n", v)
	})
	// /echo?pad=N&text=T: N bytes of "A", then T, as a server that
	// reflects what a URL asks for (an error page naming the path) does.
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		pad, _ := strconv.Atoi(r.URL.Query().Get("pad"))
		w.Header().Set("Content-Type", "text/plain")
		w.Write(bytes.Repeat([]byte("A"), pad))
		io.WriteString(w, r.URL.Query().Get("text"))
	})
	// /auth-in-type?pad=N: a binary body whose Content-Type carries N
	// bytes of "a" and then the request's Authorization header, as a
	// server that reflects what it was sent into a header does.
	mux.HandleFunc("/auth-in-type", func(w http.ResponseWriter, r *http.Request) {
		pad, _ := strconv.Atoi(r.URL.Query().Get("pad"))
		w.Header().Set("Content-Type", "image/"+strings.Repeat("a", pad)+strings.ReplaceAll(r.Header.Get("Authorization"), " ", "-"))
		w.Write([]byte("\x89PNG\r\n\x1a\n\x00\x00"))
	})
	// /auth-in-location?pad=N: a redirect to a URL with no host whose path
	// is N bytes of "a" and then the request's Authorization header, as a
	// server that reflects what it was sent into a Location does.
	mux.HandleFunc("/auth-in-location", func(w http.ResponseWriter, r *http.Request) {
		pad, _ := strconv.Atoi(r.URL.Query().Get("pad"))
		w.Header().Set("Location", "https:///"+strings.Repeat("a", pad)+strings.ReplaceAll(r.Header.Get("Authorization"), " ", "-"))
		w.WriteHeader(http.StatusFound)
	})
	// /redirect-auth?to=URL&enc=E: a redirect to URL carrying the
	// request's Authorization header (spelled by EchoEncoders[E]) in its
	// query, as an open redirect that hands on what it was sent does.
	mux.HandleFunc("/redirect-auth", func(w http.ResponseWriter, r *http.Request) {
		v := r.Header.Get("Authorization")
		if enc, ok := EchoEncoders[r.URL.Query().Get("enc")]; ok {
			v = enc(v)
		}
		w.Header().Set("Location", r.URL.Query().Get("to")+"?a="+url.QueryEscape(v))
		w.WriteHeader(http.StatusFound)
	})
	mux.HandleFunc("/bin", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x01\x02\x03"))
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		w.Header().Set("Content-Type", "text/plain")
		buf := make([]byte, 32<<10)
		for i := range buf {
			buf[i] = 'x'
		}
		for n > 0 {
			k := min(n, len(buf))
			if _, err := w.Write(buf[:k]); err != nil {
				return
			}
			n -= k
		}
	})
	mux.HandleFunc("/huge-header", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Big", strings.Repeat("h", 100<<10))
		fmt.Fprintln(w, "body after a huge header")
	})
	mux.HandleFunc("/hostile", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, HostileBody)
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(time.Minute):
		}
	})
	// /echo-auth-gz?text=T: the request's Authorization header and T, in
	// one body that is gzip-encoded when the request accepts gzip (and
	// with always=1 when it does not, as some servers do), as a
	// server that compresses its answers and reflects what it was sent
	// does; for HEAD, Go's server sends the Content-Length of that body.
	mux.HandleFunc("/echo-auth-gz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		body := fmt.Sprintf("auth=%s\ntext=%s\n", r.Header.Get("Authorization"), r.URL.Query().Get("text"))
		if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") && r.URL.Query().Get("always") == "" {
			io.WriteString(w, body)
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		gz := gzip.NewWriter(w)
		io.WriteString(gz, body)
		gz.Close()
	})
	mux.HandleFunc("/gzip", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		w.Header().Set("Content-Type", "text/plain")
		w.Header().Set("Content-Encoding", "gzip")
		gz := gzip.NewWriter(w)
		defer gz.Close()
		line := []byte("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n")
		for ; n > 0; n -= len(line) {
			if _, err := gz.Write(line[:min(n, len(line))]); err != nil {
				return
			}
		}
	})
	return mux
}

// Resolver maps fixture names to addresses and counts lookups. It is safe
// for concurrent use.
type Resolver struct {
	mu      sync.Mutex
	names   map[string][]netip.Addr
	lookups map[string]int
}

// NewResolver maps every name to 127.0.0.1; Set changes one.
func NewResolver(names ...string) *Resolver {
	r := &Resolver{names: map[string][]netip.Addr{}, lookups: map[string]int{}}
	for _, n := range names {
		r.names[n] = []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	}
	return r
}

// Set maps name to addrs.
func (r *Resolver) Set(name string, addrs ...netip.Addr) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.names[name] = addrs
}

// Lookups returns how often name was looked up.
func (r *Resolver) Lookups(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lookups[name]
}

// LookupNetIP answers from the map; an unknown name does not resolve.
func (r *Resolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lookups[host]++
	if a, ok := r.names[host]; ok {
		return append([]netip.Addr(nil), a...), nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// Staller is a stalled upstream: it answers each request with a status line
// and headers that promise a body, then sends nothing more and never closes
// the connection itself. It only reads, so it sees when the other end goes
// away.
type Staller struct {
	*Server
	stalled chan struct{}
	closed  chan struct{}
	once    [2]sync.Once
	stop    func()
}

// Stall starts a Staller for name on 127.0.0.1, with TLS (ca's certificate)
// or, when ca is nil, plain HTTP. It stops with the test, which is the only
// thing that closes its connections.
func Stall(t testing.TB, ca *CA, name string) *Staller {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Staller{
		Server:  &Server{Name: name, Port: l.Addr().(*net.TCPAddr).Port, Scheme: "http"},
		stalled: make(chan struct{}),
		closed:  make(chan struct{}),
	}
	var cfg *tls.Config
	if ca != nil {
		s.Scheme = "https"
		cfg = &tls.Config{Certificates: []tls.Certificate{ca.leaf}, MinVersion: tls.VersionTLS12}
	}
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s.accepts.Add(1)
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			go s.serve(c, cfg)
		}
	}()
	var once sync.Once
	s.stop = func() {
		once.Do(func() {
			l.Close()
			mu.Lock()
			defer mu.Unlock()
			for _, c := range conns {
				c.Close()
			}
		})
	}
	t.Cleanup(s.stop)
	return s
}

// Close stops the Staller and closes its connections, as the end of the
// test does.
func (s *Staller) Close() { s.stop() }

func (s *Staller) serve(c net.Conn, cfg *tls.Config) {
	var rw net.Conn = c
	if cfg != nil {
		rw = tls.Server(c, cfg)
	}
	br := bufio.NewReader(rw)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	s.mu.Lock()
	s.reqs = append(s.reqs, Request{Method: req.Method, Path: req.URL.RequestURI(), Header: req.Header.Clone()})
	s.mu.Unlock()
	if _, err := io.WriteString(rw, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 100000\r\n\r\nthe first bytes of a body that never ends\n"); err != nil {
		return
	}
	s.once[0].Do(func() { close(s.stalled) })
	io.Copy(io.Discard, br) // until the other end closes or fails
	s.once[1].Do(func() { close(s.closed) })
}

// Stalled is closed once a connection has had its headers and stalled.
func (s *Staller) Stalled() <-chan struct{} { return s.stalled }

// Closed is closed once the other end of a stalled connection has gone
// away: the Staller's Read on it returned EOF or an error.
func (s *Staller) Closed() <-chan struct{} { return s.closed }
