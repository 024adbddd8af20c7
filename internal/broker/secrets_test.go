package broker_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/egresstest"
	"github.com/airlockhq/airlock/internal/sandboxtest"
)

// TestSecretsAreReadWhenACallNeedsThem: a grant may name a secret that is
// not set; the session opens (trying it once, for redaction), calls that
// do not carry it run without trying again, and only a call that needs it
// fails, with a sentence naming the secret and its source, in its result
// and its audit record.
func TestSecretsAreReadWhenACallNeedsThem(t *testing.T) {
	ws := t.TempDir()
	g, err := grant.Parse([]byte(`
[paths]
read_write = ["."]
[network]
hosts = ["api.example.com"]
[secrets.TOKEN]
from = "env:AIRLOCK_TEST_UNSET_TOKEN"
tools = ["http_fetch"]
hosts = ["api.example.com"]
`), "secrets.toml", ws)
	if err != nil {
		t.Fatal(err)
	}
	var loads atomic.Int32
	recDir := t.TempDir()
	s, err := broker.Open(&broker.Options{
		Grant: g, Backend: sandboxtest.Native(t), RecordsDir: recDir,
		Egress: &broker.EgressOptions{Resolver: egresstest.NewResolver()},
		LoadSecret: func(r grant.SecretRule) (string, error) {
			loads.Add(1)
			return broker.LoadSecretFrom(func(string) string { return "" })(r)
		},
	})
	if err != nil {
		t.Fatalf("Open with an unset secret: %v", err)
	}
	t.Cleanup(func() { s.Close() })

	if res := call(t, s, "shell", `{"command":"echo ran"}`); res.Class != "ok" || !strings.Contains(res.Output.Content, "ran") {
		t.Fatalf("a call that needs no secret: %s %q", res.Class, res.Output.Content)
	}
	if n := loads.Load(); n != 1 {
		t.Fatalf("the secret was read %d times, want once (at Open) before a call carries it", n)
	}
	res := call(t, s, "http_fetch", `{"url":"https://api.example.com/user"}`)
	want := `this call needs the grant's secret "TOKEN", which could not be read: secret source "env:AIRLOCK_TEST_UNSET_TOKEN": secret is empty`
	if !res.Refused() || !strings.Contains(res.Output.Content, want) {
		t.Fatalf("a call that needs the unset secret: %s %q, want %q", res.Class, res.Output.Content, want)
	}
	if loads.Load() != 2 {
		t.Fatalf("loads = %d, want 2 (Open, then the call that needs it)", loads.Load())
	}
	var found bool
	for _, r := range calls(records(t, recDir)) {
		if r.Tool == "http_fetch" {
			found = true
			if r.Rule != "secrets" || !strings.Contains(r.Reason, want) {
				t.Errorf("audit record: rule %q reason %q", r.Rule, r.Reason)
			}
		}
	}
	if !found {
		t.Error("no audit record of the refused call")
	}
}

// TestLoadedSecretIsRedacted: a secret loaded on first use is redacted from
// the records of that call and of every later one.
func TestLoadedSecretIsRedacted(t *testing.T) {
	ws := t.TempDir()
	g, err := grant.Parse([]byte(`
[network]
hosts = ["api.example.com"]
[secrets.TOKEN]
from = "env:T"
tools = ["http_fetch"]
hosts = ["api.example.com"]
`), "secrets.toml", ws)
	if err != nil {
		t.Fatal(err)
	}
	const value = "tok-5ecret-value"
	recDir := t.TempDir()
	s, err := broker.Open(&broker.Options{
		Grant: g, Backend: sandboxtest.Native(t), RecordsDir: recDir,
		Egress: &broker.EgressOptions{Resolver: egresstest.NewResolver()},
		LoadSecret: func(r grant.SecretRule) (string, error) {
			if r.Name != "TOKEN" {
				return "", errors.New("unexpected secret")
			}
			return value, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	// The host is granted, so the secret is loaded and carried; the fetch
	// itself fails (the test resolver knows no name: nothing leaves the
	// machine), which does not matter here.
	fetched := call(t, s, "http_fetch", `{"url":"https://api.example.com/`+value+`"}`)
	if fetched.Refused() {
		t.Fatalf("the fetch was refused: %q", fetched.Output.Content)
	}
	call(t, s, "read_file", `{"path":"`+value+`"}`)
	for _, r := range records(t, recDir) {
		if strings.Contains(string(r.Args)+r.Reason+r.Detail, value) {
			t.Errorf("a record holds the secret's value: %+v", r)
		}
	}
}

// TestReadableSecretRedactedFromTheStart: a secret that can be read when
// the session opens is redacted from every record, even one written before
// any call carries it (a refused call whose arguments hold its value).
func TestReadableSecretRedactedFromTheStart(t *testing.T) {
	const value = "s3cr3t-seen-before-use-7731"
	ws := t.TempDir()
	g, err := grant.Parse([]byte(`
[paths]
read_write = ["."]
[network]
hosts = ["api.example.com"]
[secrets.TOKEN]
from = "env:AIRLOCK_TEST_TOKEN"
tools = ["http_fetch"]
hosts = ["api.example.com"]
`), "secrets.toml", ws)
	if err != nil {
		t.Fatal(err)
	}
	recDir := t.TempDir()
	s, err := broker.Open(&broker.Options{
		Grant: g, Backend: sandboxtest.Native(t), RecordsDir: recDir,
		LoadSecret: broker.LoadSecretFrom(func(k string) string {
			if k == "AIRLOCK_TEST_TOKEN" {
				return value
			}
			return ""
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	call(t, s, "read_file", `{"path":"/outside/`+value+`"}`)
	for _, r := range records(t, recDir) {
		if strings.Contains(string(r.Args)+r.Reason+r.Detail, value) {
			t.Fatalf("the secret's value is in a record: %+v", r)
		}
	}
}

// TestSecretNeverReachesTheModel: what a tool returns never shows a
// loaded secret's value to the model, in any of the forms an encoder
// gives it: a file in the tree or a command's output may hold it too.
func TestSecretNeverReachesTheModel(t *testing.T) {
	const value = "tok/5ecret&value-88"
	ws := t.TempDir()
	g, err := grant.Parse([]byte(`
[paths]
read_write = ["."]
[network]
hosts = ["api.example.com"]
[secrets.TOKEN]
from = "env:T"
tools = ["http_fetch"]
hosts = ["api.example.com"]
`), "secrets.toml", ws)
	if err != nil {
		t.Fatal(err)
	}
	s, err := broker.Open(&broker.Options{
		Grant: g, Backend: sandboxtest.Native(t), RecordsDir: t.TempDir(),
		LoadSecret: broker.LoadSecretFrom(func(k string) string {
			if k == "T" {
				return value
			}
			return ""
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := os.WriteFile(filepath.Join(ws, "env.txt"), []byte("TOKEN="+value+"\nJSON=\"tok\\/5ecret&value-88\"\nURL=tok%2F5ecret%26value-88\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ tool, args string }{
		{"read_file", `{"path":"env.txt"}`},
		{"shell", `{"command":"cat env.txt"}`},
	} {
		res := call(t, s, c.tool, c.args)
		if res.Class != "ok" {
			t.Fatalf("%s: %s %q", c.tool, res.Class, res.Output.Content)
		}
		for _, form := range []string{value, `tok\/5ecret&value-88`, "tok%2F5ecret%26value-88"} {
			if strings.Contains(res.Output.Content, form) {
				t.Errorf("%s shows the secret as %q: %q", c.tool, form, res.Output.Content)
			}
		}
		if !strings.Contains(res.Output.Content, "TOKEN=[redacted:TOKEN]") {
			t.Errorf("%s: %q, want the value redacted in place", c.tool, res.Output.Content)
		}
	}
}

// TestSecretInNoRecordField: a secret's value the model sends (or a host a
// call reaches) is redacted from every field of every record, not only
// from the arguments, the reason and the detail: here the name of an
// unknown tool and the host of a fetch, which the egress proxy records.
// The whole records file is searched, spelled as it is written.
func TestSecretInNoRecordField(t *testing.T) {
	const value = "zq7secretvalue3kx"
	ws := t.TempDir()
	g, err := grant.Parse([]byte(`
[network]
hosts = ["*.example.com"]
[secrets.TOKEN]
from = "env:AIRLOCK_TEST_TOKEN"
tools = ["http_fetch"]
hosts = ["api.example.com"]
`), "secrets.toml", ws)
	if err != nil {
		t.Fatal(err)
	}
	recDir := t.TempDir()
	s, err := broker.Open(&broker.Options{
		Grant: g, Backend: sandboxtest.Native(t), RecordsDir: recDir,
		Egress:  &broker.EgressOptions{Resolver: egresstest.NewResolver()},
		Secrets: map[string]string{"TOKEN": value},
	})
	if err != nil {
		t.Fatal(err)
	}
	if res := call(t, s, value, `{}`); !res.Refused() {
		t.Fatalf("a call of an unknown tool: %s", res.Class)
	}
	call(t, s, "http_fetch", `{"url":"https://`+value+`.example.com/"}`)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	var egress bool
	for _, r := range records(t, recDir) {
		egress = egress || r.Kind == "egress"
	}
	if !egress {
		t.Fatal("no egress record: the fetch did not reach the proxy")
	}
	files, _ := filepath.Glob(filepath.Join(recDir, "*", "*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, value) {
				t.Errorf("%s:%d holds the secret's value: %s", f, i+1, line)
			}
		}
	}
}
