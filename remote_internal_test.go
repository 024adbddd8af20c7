package airlock

import (
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/native"
	"github.com/airlockhq/airlock/internal/toolserver"
)

// TestOpenRemote opens a session whose sandboxes run on hands served in
// this process over loopback WebSocket: a call reads what a local session
// reads, and the audit record names the hands.
func TestOpenRemote(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("remote hands\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	srv, ln := serveHands(t, dir, "api-test-token-0123")

	read := func(o *Options) string {
		t.Helper()
		o.Dir, o.RecordsDir, o.AllowUnenforcedLimits = dir, t.TempDir(), true
		s, err := Open(o)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		res, err := s.Call(context.Background(), "read_file", map[string]any{"path": "a.txt"})
		if err != nil || res.Class != "ok" {
			t.Fatalf("read_file: %v %+v", err, res)
		}
		if o.Remote != nil {
			rec, _ := os.ReadFile(filepath.Join(o.RecordsDir, s.ID(), "audit.jsonl"))
			if !strings.Contains(string(rec), `"remote":"ws://`+ln.Addr().String()+" "+srv.Identity()) {
				t.Errorf("the record does not name the hands:\n%s", rec)
			}
		}
		return res.Text
	}
	local := read(&Options{})
	remote := read(&Options{Remote: &Remote{Endpoint: "ws://" + ln.Addr().String(), Token: "api-test-token-0123"}})
	if local != remote {
		t.Fatalf("remote %q, local %q", remote, local)
	}
	if srv.Runs() != 1 {
		t.Fatalf("the hands ran %d calls, want 1", srv.Runs())
	}
}

// TestRemoteKubeTarget: Options.Remote takes a kube:// target, and a bad
// one is refused naming what is wrong before anything is spawned.
func TestRemoteKubeTarget(t *testing.T) {
	g, err := grant.FromFlags(t.TempDir(), grant.Flags{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = remoteBackend(&Options{Remote: &Remote{Endpoint: "kube://Agents/hands"}}, g, nil)
	if err == nil || !strings.Contains(err.Error(), `namespace "Agents" is not a DNS label`) {
		t.Fatalf("error %v, want the bad namespace named", err)
	}
	t.Setenv("AIRLOCK_KUBE", "")
	if _, lerr := toolserver.FindKubeHelper(nil); lerr == nil {
		t.Skip("an airlock-kube is installed here")
	}
	_, err = remoteBackend(&Options{Remote: &Remote{Endpoint: "kube://agents/hands"}}, g, nil)
	if err == nil || !strings.Contains(err.Error(), "airlock-kube helper") {
		t.Fatalf("error %v, want the missing helper named", err)
	}
}

// serveHands serves hands on loopback for the test's life: a native
// backend over dir, read-write, taking token. It skips where there is no
// native sandbox.
func serveHands(t *testing.T, dir, token string) (*toolserver.Server, net.Listener) {
	t.Helper()
	b, err := native.New(nil)
	if err != nil {
		t.Skipf("no native sandbox here: %v", err)
	}
	g, err := grant.FromFlags(dir, grant.Flags{ReadWrite: []string{dir}, AllowUnenforcedLimits: true})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := toolserver.NewServer(&toolserver.ServerOptions{Grant: g, Backend: b})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: srv.Handler(token)}
	go hs.Serve(ln)
	t.Cleanup(func() { hs.Close() })
	return srv, ln
}
