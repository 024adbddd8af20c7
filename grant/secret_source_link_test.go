package grant

import (
	"strings"
	"testing"
)

// A secret's file is read by the broker, on the host, each time a session
// opens (and again on first use when that failed). A source path that
// passes through a symlink inside a read-write tree lets the sandbox point
// it anywhere between sessions: the broker would then read any host file it
// can and send it as the secret, to the secret's hosts. Such a source is
// refused as a granted path through a planted link is.
func TestSecretSourceThroughPlantedLink(t *testing.T) {
	T := fixture(t, "host/tok", "host/dir/tok", "ws/f",
		"ws/tok-link -> $T/host/tok",
		"ws/dir-link -> $T/host/dir",
		"ws/dangling -> $T/host/absent")
	for _, from := range []string{
		"ws/tok-link",
		"ws/dir-link/tok",
		"ws/dangling",
		T + "/ws/tok-link",
	} {
		text := `
[paths]
read_write = ["ws"]
[network]
hosts = ["api.example.com"]
[secrets.TOKEN]
from = "file:` + from + `"
tools = ["http_fetch"]
hosts = ["api.example.com"]
`
		g, err := Parse([]byte(text), "grant.toml", T)
		if err == nil {
			t.Errorf("from = %q: accepted (secrets %v); want a refusal naming the symlink the sandbox could replace", from, g.Secrets())
			continue
		}
		if !strings.Contains(err.Error(), "symlink") {
			t.Errorf("from = %q: refused with %v; want the symlink named", from, err)
		}
	}
	// A source through a symlink outside every read-write tree is fine.
	g := mustParse(t, T, `
[paths]
read_write = ["ws"]
[network]
hosts = ["api.example.com"]
[secrets.TOKEN]
from = "file:$T/host/dir/tok"
tools = ["http_fetch"]
hosts = ["api.example.com"]
`)
	if len(g.Secrets()) != 1 {
		t.Fatalf("secrets %v", g.Secrets())
	}
}

// The same holds when flags widen a grant file: a read-write tree added
// with --rw that holds the symlink a secret's source passes through.
func TestSecretSourceThroughLinkWidenedByFlags(t *testing.T) {
	T := fixture(t, "host/tok", "ws/f", "ws/tok-link -> $T/host/tok")
	g := mustParse(t, T, `
[network]
hosts = ["api.example.com"]
[secrets.TOKEN]
from = "file:ws/tok-link"
tools = ["http_fetch"]
hosts = ["api.example.com"]
`)
	if _, err := g.With(T, Flags{ReadWrite: []string{T + "/ws"}}); err == nil || !strings.Contains(err.Error(), "symlink") {
		t.Errorf("--rw of the tree holding the secret's symlink: %v; want a refusal naming the symlink", err)
	}
}
