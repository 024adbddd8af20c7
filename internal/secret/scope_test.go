package secret_test

import (
	"context"
	"encoding/json"
	"fmt"
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

// The sandbox's init is this test binary, started in a hidden mode.
func TestMain(m *testing.M) { sandboxtest.Main(m) }

// A secret goes only to the tools and the hosts (and ports) its rule names,
// in its own header: a real session, a real sandbox, loopback fixtures that
// record every header they get. Two secrets, one from a file and one from
// the environment, each scoped to another host; a third granted host gets
// neither; the shell tool, though named in a rule, reaches no host the
// broker knows of and so never carries a secret, in its environment or on
// the wire.
func TestSecretScope(t *testing.T) {
	const (
		tokenValue = "tok-file-5ecret-4411"
		keyValue   = "key-env-5ecret-9902"
	)
	ca := egresstest.NewCA(t, "a.test", "d.test", "e.test")
	a := egresstest.Serve(t, ca, "a.test", nil)
	d := egresstest.Serve(t, ca, "d.test", nil)
	e := egresstest.Serve(t, ca, "e.test", nil)
	ws, caDir, secretDir := t.TempDir(), t.TempDir(), t.TempDir()
	caFile := ca.WriteFile(t, caDir)
	tokenFile := filepath.Join(secretDir, "token")
	if err := os.WriteFile(tokenFile, []byte(tokenValue+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	toml := fmt.Sprintf(`
[paths]
read_write = ["."]
read_only = [%[4]q]
[network]
hosts = [%[1]q, %[2]q, %[3]q]
private = [%[1]q, %[2]q, %[3]q]
[secrets.TOKEN]
from = "file:%[5]s"
tools = ["http_fetch", "shell"]
hosts = [%[1]q]
[secrets.API_KEY]
from = "env:AIRLOCK_SCOPE_TEST_KEY"
tools = ["http_fetch"]
hosts = [%[2]q]
header = "X-Api-Key"
format = "{value}"
`, a.HostPort(), d.HostPort(), e.HostPort(), caDir, tokenFile)
	g, err := grant.Parse([]byte(toml), "scope.toml", ws)
	if err != nil {
		t.Fatal(err)
	}
	recDir := t.TempDir()
	s, err := broker.Open(&broker.Options{
		Grant: g, Backend: sandboxtest.Native(t), RecordsDir: recDir,
		LoadSecret: broker.LoadSecretFrom(func(k string) string {
			if k == "AIRLOCK_SCOPE_TEST_KEY" {
				return keyValue
			}
			return ""
		}),
		Egress: &broker.EgressOptions{
			Resolver: egresstest.NewResolver("a.test", "d.test", "e.test"),
			Env:      []string{"SSL_CERT_FILE=" + caFile},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	run := func(tool string, args any) string {
		t.Helper()
		b, _ := json.Marshal(args)
		res, err := s.Call(context.Background(), tool, b)
		if err != nil {
			t.Fatalf("%s %s: %v", tool, b, err)
		}
		if res.Refused() || res.Output.IsError {
			recs, _, _ := audit.ReadAll(recDir, "")
			t.Fatalf("%s %s: %s %q\nrecords: %+v", tool, b, res.Class, res.Output.Content, recs)
		}
		return res.Output.Content
	}

	run("http_fetch", map[string]string{"url": a.URL("/ok")})
	run("http_fetch", map[string]string{"url": d.URL("/ok")})
	run("http_fetch", map[string]string{"url": e.URL("/ok")})
	env := run("shell", map[string]string{"command": `env; curl -sS --max-time 10 --cacert "$SSL_CERT_FILE" ` + a.URL("/from-shell")})
	for _, v := range []string{tokenValue, keyValue} {
		if strings.Contains(env, v) {
			t.Errorf("the shell call's environment or output holds a secret: %q", env)
		}
	}

	type sent struct{ auth, key string }
	headers := func(srv *egresstest.Server) []sent {
		var out []sent
		for _, r := range srv.Requests() {
			out = append(out, sent{r.Header.Get("Authorization"), r.Header.Get("X-Api-Key")})
		}
		return out
	}
	want := map[*egresstest.Server][]sent{
		a: {{auth: "Bearer " + tokenValue}, {}}, // http_fetch, then curl from the shell
		d: {{key: keyValue}},
		e: {{}},
	}
	for srv, w := range want {
		if got := headers(srv); fmt.Sprint(got) != fmt.Sprint(w) {
			t.Errorf("%s received (Authorization, X-Api-Key) %q, want %q", srv.Name, got, w)
		}
	}
}

// A rule's hosts match like network.hosts: names normalised, no port meaning
// 443, a port only that port.
func TestSecretHostMatching(t *testing.T) {
	g, err := grant.Parse([]byte(`
[network]
hosts = ["api.example.com", "upload.example.com:8443"]
[secrets.TOKEN]
from = "env:TOKEN"
tools = ["http_fetch"]
hosts = ["api.example.com", "upload.example.com:8443"]
`), "hosts.toml", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r := g.Secrets()[0]
	for host, want := range map[string]bool{
		"api.example.com":          true,
		"api.example.com:443":      true,
		"API.Example.COM.":         true,
		"api.example.com:8443":     false,
		"upload.example.com:8443":  true,
		"upload.example.com":       false,
		"example.com":              false,
		"evil-api.example.com":     false,
		"api.example.com.evil.com": false,
		"":                         false,
		"api.example.com:0":        false,
		"api.example.com:x":        false,
	} {
		if got := r.AllowsHost(host); got != want {
			t.Errorf("AllowsHost(%q) = %v, want %v", host, got, want)
		}
	}
}
