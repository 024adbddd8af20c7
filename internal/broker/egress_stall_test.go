package broker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/egresstest"
	"github.com/airlockhq/airlock/internal/sandboxtest"
)

// A stalled upstream — it sends headers, then nothing, and keeps its socket
// open — never holds a call past its time limit, whoever talks to it
// (http_fetch, curl with or without its own -m, over TLS in a CONNECT tunnel
// or as plain HTTP through the proxy), and once the sandbox is gone the
// proxy has closed the upstream's connection.
func TestStalledUpstreamEndsAtTheTimeLimit(t *testing.T) {
	backend := sandboxtest.Native(t)
	curl := func(url string, more string) string {
		b, _ := json.Marshal(map[string]string{"command": `curl -sS ` + more + ` --cacert "$SSL_CERT_FILE" ` + url + `; echo "[curl exit $?]"`})
		return string(b)
	}
	tests := []struct {
		name  string
		tls   bool
		tool  string
		args  func(url string) string
		check func(res *broker.Result) bool
		// limit is the call's time limit. A loaded machine can take seconds
		// to start the sandbox, curl and the connection before the upstream
		// stalls, so each limit leaves that room: curl's own -m 2 must end
		// its call well before the call's limit, and the stall must have
		// begun before the fetch's or the call's limit ends it.
		limit time.Duration
	}{
		{name: "http_fetch", tls: true, tool: "http_fetch",
			args: func(url string) string { return fmt.Sprintf(`{"url":%q}`, url) },
			check: func(res *broker.Result) bool {
				return res.Class == broker.ClassOK && res.Output.IsError && strings.Contains(res.Output.Content, "the fetch ran past its time limit")
			},
			limit: 10 * time.Second},
		{name: "curl -m 2", tls: true, tool: "shell",
			args:  func(url string) string { return curl(url, "-m 2") },
			check: func(res *broker.Result) bool { return strings.Contains(res.Output.Content, "[curl exit 28]") },
			limit: 30 * time.Second},
		{name: "curl -m 2 plain http", tool: "shell",
			args:  func(url string) string { return curl(url, "-m 2") },
			check: func(res *broker.Result) bool { return strings.Contains(res.Output.Content, "[curl exit 28]") },
			limit: 30 * time.Second},
		{name: "curl without a time limit", tls: true, tool: "shell",
			args: func(url string) string { return curl(url, "") },
			check: func(res *broker.Result) bool {
				return res.Class == broker.ClassTimeout || strings.Contains(res.Output.Content, "[timed out after 10s]")
			},
			limit: 10 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			limit := tt.limit
			ca := egresstest.NewCA(t, "s.test")
			var up *egresstest.Staller
			if tt.tls {
				up = egresstest.Stall(t, ca, "s.test")
			} else {
				up = egresstest.Stall(t, nil, "s.test")
			}
			ws, caDir := t.TempDir(), t.TempDir()
			caFile := ca.WriteFile(t, caDir)
			toml := fmt.Sprintf(`
[paths]
read_write = ["."]
read_only = [%[2]q]
[network]
hosts = [%[1]q]
private = [%[1]q]
plain_http = [%[1]q]
[limits]
time = %[3]q
`, up.HostPort(), caDir, limit.String())
			g, err := grant.Parse([]byte(toml), "stall.toml", ws)
			if err != nil {
				t.Fatal(err)
			}
			s, err := broker.Open(&broker.Options{
				Grant: g, Backend: backend, RecordsDir: t.TempDir(),
				Egress: &broker.EgressOptions{
					Resolver: egresstest.NewResolver("s.test"),
					Env:      []string{"SSL_CERT_FILE=" + caFile},
				},
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })

			type answer struct {
				res *broker.Result
				err error
			}
			done := make(chan answer, 1)
			go func() {
				res, err := s.Call(context.Background(), tt.tool, json.RawMessage(tt.args(up.URL("/stall"))))
				done <- answer{res, err}
			}()
			var a answer
			select {
			case a = <-done:
			case <-time.After(limit + time.Minute):
				// (The proxy's idle timeout, 5 minutes, would end it much
				// later.) Let go of it, so the session can close.
				up.Close()
				t.Fatalf("the call was still running a minute past its %s time limit", limit)
			}
			if a.err != nil {
				t.Fatal(a.err)
			}
			select {
			case <-up.Stalled():
			default:
				t.Fatalf("the upstream never stalled a response: class %s, %q", a.res.Class, a.res.Output.Content)
			}
			if !tt.check(a.res) {
				t.Errorf("class %s, IsError %v: %q; want a time-limit result", a.res.Class, a.res.Output.IsError, a.res.Output.Content)
			}
			select {
			case <-up.Closed():
			case <-time.After(30 * time.Second):
				t.Fatal("the stalled upstream's connection is still open after the call ended")
			}
		})
	}
}
