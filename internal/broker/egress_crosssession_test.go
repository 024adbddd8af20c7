package broker_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/egresstest"
	"github.com/airlockhq/airlock/internal/sandboxtest"
)

// A sandbox whose grant names the directories where proxies could keep
// their sockets (here TMPDIR) must not find another session's egress
// proxy there and use it, with the other grant's hosts: its own grant
// names no host at all. (Every sandbox runs as the broker's user, so the
// socket directory's 0700 mode does not keep it out.)
func TestProxySocketUnreachableFromAnotherSession(t *testing.T) {
	backend := sandboxtest.Native(t)
	// A short TMPDIR of this test's own: a socket path must fit sun_path.
	tmp, err := os.MkdirTemp("", "eg")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(tmp) })
	// Session A names no host; it may read TMPDIR. Its grant is built
	// before TMPDIR names tmp: a grant of $TMPDIR itself is refused (the
	// grant's own rule for the host's sockets), and this test is of where
	// the broker keeps its proxies.
	wsA := t.TempDir()
	gA, err := grant.Parse([]byte(fmt.Sprintf(`
[paths]
read_write = ["."]
read_only = [%q]
`, tmp)), "a.toml", wsA)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", tmp)
	ca := egresstest.NewCA(t, "a.test")
	a := egresstest.Serve(t, ca, "a.test", nil)
	caFile := ca.WriteFile(t, tmp) // read-only to session A

	// Session B may reach a.test; its call waits until told to stop.
	wsB := t.TempDir()
	gB, err := grant.Parse([]byte(fmt.Sprintf(`
[paths]
read_write = ["."]
[network]
hosts = [%[1]q]
private = [%[1]q]
`, a.HostPort())), "b.toml", wsB)
	if err != nil {
		t.Fatal(err)
	}
	sB, err := broker.Open(&broker.Options{Grant: gB, Backend: backend, RecordsDir: t.TempDir(),
		Egress: &broker.EgressOptions{Resolver: egresstest.NewResolver("a.test")}})
	if err != nil {
		t.Fatal(err)
	}
	defer sB.Close()

	sA, err := broker.Open(&broker.Options{Grant: gA, Backend: backend, RecordsDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer sA.Close()

	started, done := filepath.Join(wsB, "started"), filepath.Join(wsB, "done")
	bOut := make(chan string, 1)
	go func() {
		b, _ := json.Marshal(map[string]string{"command": fmt.Sprintf(`touch %q; while [ ! -e %q ]; do sleep 0.05; done`, started, done)})
		res, err := sB.Call(t.Context(), "shell", b)
		if err != nil {
			bOut <- err.Error()
			return
		}
		bOut <- res.Output.Content
	}()
	defer func() {
		if err := os.WriteFile(done, nil, 0o644); err != nil {
			t.Error(err)
		}
		t.Logf("B: %s", <-bOut)
	}()
	// B's proxy is listening once its sandbox runs the command.
	for {
		if _, err := os.Stat(started); err == nil {
			break
		}
		select {
		case out := <-bOut:
			bOut <- out
			t.Fatalf("B's call ended before it started: %s", out)
		case <-time.After(20 * time.Millisecond):
		}
	}

	cmd := fmt.Sprintf(`n=0
for s in %[1]s/airlock-egress-*/proxy.sock; do
	[ -S "$s" ] || continue
	n=$((n+1))
	curl -sS --max-time 10 --cacert %[2]q --proxy "socks5h://localhost$s" %[3]s
done
echo "sockets found: $n"`, tmp, caFile, a.URL("/ok"))
	b, _ := json.Marshal(map[string]string{"command": cmd})
	res := call(t, sA, "shell", string(b))
	if !strings.Contains(res.Output.Content, "sockets found: 0") || strings.Contains(res.Output.Content, "hello from a.test") || a.Accepts() != 0 {
		t.Errorf("a sandbox whose grant names no host found another session's egress proxy (a.test saw %d connections): %q", a.Accepts(), res.Output.Content)
	}
}
