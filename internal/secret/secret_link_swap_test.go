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
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/egresstest"
	"github.com/airlockhq/airlock/internal/sandboxtest"
)

// A secret's file is read by the broker on the host when a session opens.
// Where its path passes through a symlink in a read-write tree, a sandbox
// can point that symlink at any host file the broker can read: the next
// session then sends that file, as the secret, to the secret's host. The
// grant must refuse such a source (or, were it accepted, the host file must
// never leave): a real sandbox swaps the link, a second session fetches.
func TestSecretSourceLinkSwap(t *testing.T) {
	const (
		tokenValue = "tok-real-5ecret-1177"
		canary     = "host-canary-3e8d1c55"
	)
	ca := egresstest.NewCA(t, "a.test")
	a := egresstest.Serve(t, ca, "a.test", nil)
	caDir := t.TempDir()
	caFile := ca.WriteFile(t, caDir)
	T, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws, host := filepath.Join(T, "ws"), filepath.Join(T, "host")
	for _, d := range []string{ws, host} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(host, "tok"), []byte(tokenValue+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A host file outside every grant: the sandbox must never obtain it.
	other := filepath.Join(host, "other-credential")
	if err := os.WriteFile(other, []byte(canary+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(host, "tok"), filepath.Join(ws, "tok-link")); err != nil {
		t.Fatal(err)
	}
	text := fmt.Sprintf(`
[paths]
read_write = ["ws"]
read_only = [%[2]q]
[network]
hosts = [%[1]q]
private = [%[1]q]
[secrets.TOKEN]
from = "file:ws/tok-link"
tools = ["http_fetch"]
hosts = [%[1]q]
`, a.HostPort(), caDir)
	g, err := grant.Parse([]byte(text), "grant.toml", T)
	if err != nil {
		if !strings.Contains(err.Error(), "symlink") {
			t.Fatalf("refused, but not for the symlink: %v", err)
		}
		return // refused: nothing can be swapped
	}
	open := func() *broker.Session {
		s, err := broker.Open(&broker.Options{
			Grant: g, Backend: sandboxtest.Native(t), RecordsDir: t.TempDir(),
			LoadSecret: broker.LoadSecretFrom(func(string) string { return "" }),
			Egress: &broker.EgressOptions{
				Resolver: egresstest.NewResolver("a.test"),
				Env:      []string{"SSL_CERT_FILE=" + caFile},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	call := func(s *broker.Session, tool string, args any) string {
		b, _ := json.Marshal(args)
		res, err := s.Call(context.Background(), tool, b)
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		return res.Output.Content
	}
	s1 := open()
	out := call(s1, "shell", map[string]string{"command": "ln -sfn " + other + " " + filepath.Join(ws, "tok-link") + " && echo swapped"})
	s1.Close()
	if !strings.Contains(out, "swapped") {
		t.Fatalf("the sandbox could not swap the link: %q", out)
	}
	s2 := open()
	defer s2.Close()
	call(s2, "http_fetch", map[string]string{"url": a.URL("/ok")})
	for _, r := range a.Requests() {
		if strings.Contains(r.Header.Get("Authorization"), canary) {
			t.Fatalf("the host file %s the sandbox pointed the secret's symlink at was sent to %s: Authorization %q", other, a.Name, r.Header.Get("Authorization"))
		}
	}
}
