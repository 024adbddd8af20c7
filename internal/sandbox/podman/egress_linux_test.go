package podman

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/egresstest"
)

// TestLiveEgress: through the Podman backend, a granted host is reached
// through the per-call proxy (the socket directory mounted in, the
// in-container forwarder, the proxy variables), and nothing else is: not
// a host the grant does not name, not the host's loopback directly.
func TestLiveEgress(t *testing.T) {
	b := newLive(t)
	t.Setenv("TMPDIR", t.TempDir())
	ca := egresstest.NewCA(t, "a.test", "b.test")
	a := egresstest.Serve(t, ca, "a.test", nil)
	bsrv := egresstest.Serve(t, ca, "b.test", nil)
	sentinel, hits := egresstest.Sentinel(t)
	ws, caDir := t.TempDir(), t.TempDir()
	caFile := ca.WriteFile(t, caDir)
	g, err := grant.Parse([]byte(fmt.Sprintf(`
[paths]
read_write = ["."]
read_only = [%q]
[network]
hosts = [%q]
private = [%q]
`, caDir, a.HostPort(), a.HostPort())), "egress.toml", ws)
	if err != nil {
		t.Fatal(err)
	}
	s, err := broker.Open(&broker.Options{Grant: g, Backend: b, RecordsDir: t.TempDir(),
		Egress: &broker.EgressOptions{Resolver: egresstest.NewResolver("a.test", "b.test"), Env: []string{"SSL_CERT_FILE=" + caFile}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	run := func(tool, args string) string {
		t.Helper()
		res, err := s.Call(context.Background(), tool, json.RawMessage(args))
		if err != nil {
			t.Fatalf("%s %s: %v", tool, args, err)
		}
		return res.Output.Content
	}
	if out := run("http_fetch", fmt.Sprintf(`{"url":%q}`, a.URL("/ok"))); !strings.Contains(out, "hello from a.test") {
		t.Errorf("granted host through the proxy: %q", out)
	}
	if out := run("http_fetch", fmt.Sprintf(`{"url":%q}`, a.URL("/redirect?to="+bsrv.URL("/ok")))); !strings.Contains(out, "refused by the egress proxy") {
		t.Errorf("redirect to a host not granted: %q", out)
	}
	// A client that ignores the proxy variables has no route out: the
	// container's 127.0.0.1 is its own.
	script := fmt.Sprintf(`{"command":"echo x | nc -w 2 127.0.0.1 %d; echo rc=$?; echo $HTTPS_PROXY"}`, sentinel)
	if out := run("shell", script); !strings.Contains(out, "http://127.0.0.1:") {
		t.Errorf("shell: %q, want the proxy variables set", out)
	}
	if n := hits(); n != 0 {
		t.Errorf("the host's loopback sentinel was reached %d times from the container", n)
	}
	if len(bsrv.Requests()) != 0 {
		t.Errorf("b.test, not granted, received %d requests", len(bsrv.Requests()))
	}
}
