package toolserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/egresstest"
)

// TestRemoteEgressNarrowedByBrokerGrant: hands that serve brokers of
// several grants allow, between them, more hosts than one broker's grant
// names. A call of that broker reaches only what both grants allow, as its
// paths and limits do: the hands' proxy refuses a host the broker's grant
// does not name. Before, the broker's grant decided only whether a call
// had a network at all, and a remote shell command reached every host the
// hands' grant allowed: curl to a fixture the broker's grant never named
// fetched its page.
func TestRemoteEgressNarrowedByBrokerGrant(t *testing.T) {
	granted := egresstest.Serve(t, nil, "granted.test", nil)
	other := egresstest.Serve(t, nil, "other.test", nil)
	w := newWorkspace(t)
	gp, op := strconv.Itoa(granted.Port), strconv.Itoa(other.Port)
	var err error
	w.grant, err = grant.FromFlags(w.root, grant.Flags{ReadWrite: []string{w.root}, Private: []string{"127.0.0.1:" + gp}})
	if err != nil {
		t.Fatal(err)
	}
	hands, err := grant.FromFlags(w.root, grant.Flags{ReadWrite: []string{w.root}, Private: []string{"127.0.0.1:" + gp, "127.0.0.1:" + op}})
	if err != nil {
		t.Fatal(err)
	}
	_, url := serveGrant(t, hands)
	s := w.session(t, remote(t, url, nil))
	curl := func(port string) string {
		res, err := s.Call(context.Background(), "shell", json.RawMessage(`{"command":"curl -sS http://127.0.0.1:`+port+`/ 2>&1; echo","timeout":30}`))
		if err != nil {
			t.Fatal(err)
		}
		return res.Output.Content
	}
	if out := curl(gp); !strings.Contains(out, "404 page not found") {
		t.Fatalf("the host both grants allow was not reached: %q", out)
	}
	if out := curl(op); strings.Contains(out, "404 page not found") {
		t.Errorf("a remote call reached 127.0.0.1:%s, which the hands allow and the broker's grant does not: %q", op, out)
	}
}

// TestRemotePlainHTTPNarrowedByBrokerGrant: an http_fetch on the hands
// follows a redirect to plain http only where the broker's grant allows
// plain http too, as its own sandbox would: the hands replaced the
// broker's network.plain_http with theirs, so a redirect to http:// on a
// host the broker allows over https alone was followed in the clear.
func TestRemotePlainHTTPNarrowedByBrokerGrant(t *testing.T) {
	target := egresstest.Serve(t, nil, "target.test", nil)
	tp := strconv.Itoa(target.Port)
	start := egresstest.Serve(t, nil, "start.test", http.RedirectHandler("http://127.0.0.1:"+tp+"/", http.StatusFound))
	sp := strconv.Itoa(start.Port)
	w := newWorkspace(t)
	both := []string{"127.0.0.1:" + sp, "127.0.0.1:" + tp}
	var err error
	w.grant, err = grant.FromFlags(w.root, grant.Flags{ReadWrite: []string{w.root}, Private: both, PlainHTTP: both[:1]})
	if err != nil {
		t.Fatal(err)
	}
	hands, err := grant.FromFlags(w.root, grant.Flags{ReadWrite: []string{w.root}, Private: both, PlainHTTP: both})
	if err != nil {
		t.Fatal(err)
	}
	_, url := serveGrant(t, hands)
	s := w.session(t, remote(t, url, nil))
	res, err := s.Call(context.Background(), "http_fetch", json.RawMessage(`{"url":"http://127.0.0.1:`+sp+`/"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Output.Content, "redirect") || strings.Contains(res.Output.Content, "404 page not found") {
		t.Errorf("a remote http_fetch followed a redirect to plain http on 127.0.0.1:%s, which the broker's grant allows over https alone: %q", tp, res.Output.Content)
	}
}
