package broker_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/egresstest"
	"github.com/airlockhq/airlock/internal/sandboxtest"
)

const providerKey = "brv-k3y-must-never-show-9931"

// searchSession is a session whose grant names a fake Brave provider on
// loopback (path picks its answer) with a key and a cap of two searches.
func searchSession(t *testing.T, path string) (*broker.Session, string) {
	t.Helper()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	ca := egresstest.NewCA(t, "search.test")
	srv := egresstest.Serve(t, ca, "search.test", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Header.Get("X-Subscription-Token") != providerKey:
			w.WriteHeader(http.StatusUnauthorized)
		case r.URL.Path == "/brave":
			fmt.Fprintf(w, `{"web":{"results":[{"title":"Result for %s","url":"https://go.dev/","description":"snippet"}]}}`, r.URL.Query().Get("q"))
		default:
			w.WriteHeader(http.StatusBadGateway)
			io.WriteString(w, "upstream trace 5521 exploded")
		}
	}))
	ws, caDir := t.TempDir(), t.TempDir()
	caFile := ca.WriteFile(t, caDir)
	toml := fmt.Sprintf(`
[paths]
read_write = ["."]
read_only = [%[2]q]
[network]
hosts = [%[1]q]
private = [%[1]q]
[limits]
searches = 2
[tools.web_search]
provider = "brave"
endpoint = "https://%[1]s%[3]s"
[secrets.BRAVE_KEY]
from = "env:BRAVE_KEY"
tools = ["web_search"]
hosts = [%[1]q]
header = "X-Subscription-Token"
format = "{value}"
`, srv.HostPort(), caDir, path)
	g, err := grant.Parse([]byte(toml), "search.toml", ws)
	if err != nil {
		t.Fatal(err)
	}
	records := t.TempDir()
	s, err := broker.Open(&broker.Options{
		Grant: g, Backend: sandboxtest.Native(t), RecordsDir: records,
		Secrets: map[string]string{"BRAVE_KEY": providerKey},
		Egress:  &broker.EgressOptions{Resolver: egresstest.NewResolver("search.test"), Env: []string{"SSL_CERT_FILE=" + caFile}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, records
}

// noKeyIn fails if the provider key is in any file under dir.
func noKeyIn(t *testing.T, dir string) {
	t.Helper()
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			if b, _ := os.ReadFile(p); strings.Contains(string(b), providerKey) {
				t.Errorf("the provider key is in %s", p)
			}
		}
		return nil
	})
}

// TestWebSearchThroughTheSandbox (issue 18): web_search runs in the
// sandbox through the egress proxy with the key the grant binds to the
// provider; each call's cost (searches, bytes, the sandbox's CPU, memory
// and wall time) is in its result and audit record and adds up in the
// session; the call past limits.searches is refused; the key is never in
// an output, a record or an error.
func TestWebSearchThroughTheSandbox(t *testing.T) {
	s, records := searchSession(t, "/brave")
	ctx := context.Background()
	var wall float64
	for i := range 2 {
		res, err := s.Call(ctx, "web_search", []byte(fmt.Sprintf(`{"query":"q%d"}`, i)))
		if err != nil {
			t.Fatal(err)
		}
		out := res.Output
		if res.Class != broker.ClassOK || !strings.Contains(out.Content, fmt.Sprintf("1. Result for q%d", i)) {
			t.Fatalf("search %d: class %s output %q", i, res.Class, out.Content)
		}
		c := out.Meta.Cost
		if c == nil || c.Searches != 1 || c.BytesFetched == 0 || c.WallSeconds <= 0 || c.PeakMemory <= 0 {
			t.Fatalf("search %d cost %+v", i, c)
		}
		wall += c.WallSeconds
	}
	res, err := s.Call(ctx, "web_search", []byte(`{"query":"third"}`))
	if err != nil || !res.Refused() || !strings.Contains(res.Output.Content, "limits.searches (2)") {
		t.Fatalf("a third search past limits.searches = 2: %+v, %v", res, err)
	}
	total := s.Cost()
	if total.Searches != 2 || total.WallSeconds < wall-1e-9 {
		t.Errorf("session cost %+v, want 2 searches and at least %.3fs of wall time", total, wall)
	}
	recs, _, err := audit.ReadAll(records, "")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range recs {
		if r.Kind == audit.KindCall && r.Tool == "web_search" && r.Decision == "allowed" {
			if r.Cost == nil || r.Cost.Searches != 1 {
				t.Errorf("record %s cost %+v", r.CallID, r.Cost)
			}
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d allowed web_search records, want 2", n)
	}
	s.Close()
	noKeyIn(t, records)
}

// TestWebSearchProviderErrorDetail: a provider's failure is one sentence
// for the model; what the provider said goes to the audit record only.
func TestWebSearchProviderErrorDetail(t *testing.T) {
	s, records := searchSession(t, "/down")
	res, err := s.Call(context.Background(), "web_search", []byte(`{"query":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Output.IsError || !strings.Contains(res.Output.Content, "answered HTTP 502") || strings.Contains(res.Output.Content, "exploded") {
		t.Fatalf("output %q", res.Output.Content)
	}
	recs, _, _ := audit.ReadAll(records, "")
	found := false
	for _, r := range recs {
		if r.CallID == res.CallID && strings.Contains(r.Detail, "upstream trace 5521 exploded") {
			found = true
		}
	}
	if !found {
		t.Errorf("the provider's answer is not in the audit record's detail")
	}
	s.Close()
	noKeyIn(t, records)
}
