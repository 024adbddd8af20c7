package toolserver_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/airlockhq/airlock/internal/toolserver"
)

// TestBrokerFollowsNoRedirect: the broker's bearer token goes only to the
// endpoint it was given, over the scheme it was given. An endpoint that
// answers the upgrade with a redirect (to plain http:// on the same host,
// where Go's client keeps the Authorization header) must not get the token
// sent there in clear: wss:// would otherwise be downgraded by one answer,
// and the rule that plain ws:// goes only to loopback bypassed.
func TestBrokerFollowsNoRedirect(t *testing.T) {
	var leaked atomic.Value
	plain, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ps := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if a := r.Header.Get("Authorization"); a != "" {
			leaked.Store(a)
		}
		http.Error(w, "no", http.StatusNotFound)
	})}
	go ps.Serve(plain)
	defer ps.Close()

	ts := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://"+plain.Addr().String()+"/", http.StatusTemporaryRedirect)
	}))
	defer ts.Close()
	pool := x509.NewCertPool()
	pool.AddCert(ts.Certificate())

	_, err = toolserver.New(context.Background(), &toolserver.Options{
		Endpoint: "wss://" + strings.TrimPrefix(ts.URL, "https://"), Token: testToken,
		TLS: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12},
	})
	if err == nil {
		t.Fatal("connected through a redirect")
	}
	if v := leaked.Load(); v != nil {
		t.Fatalf("the token went over plain http to the redirect's target: %q", v)
	}
	if !strings.Contains(err.Error(), "redirect") {
		t.Errorf("error %q does not say the endpoint redirected", err)
	}
}
