package toolserver_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/toolserver"
)

// TestEndpointUserInfoNeverEchoed: credentials written into a remote
// endpoint's URL (ws://user:password@host, the password holding an "@" as
// RFC 3986 parsers, Go's included, accept) never reach a message, a log or
// the audit records' "remote" field, which all name the endpoint.
func TestEndpointUserInfoNeverEchoed(t *testing.T) {
	w := newWorkspace(t)
	_, url := inProcess(t, w)
	host := strings.TrimPrefix(url, "ws://")
	for _, ep := range []string{
		"ws://agent:hunter2@vault@" + host,
		"ws://agent:hunter2@vault@127.0.0.1:1",
		"wss://agent:hunter2@vault@127.0.0.1:1/path",
		"ftp://agent:hunter2@vault@127.0.0.1:1",
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		b, err := toolserver.New(ctx, &toolserver.Options{Endpoint: ep, Token: testToken, Heartbeat: testHeartbeat, ConnectTimeout: 2 * time.Second})
		cancel()
		var said string
		if err != nil {
			said = err.Error()
		} else {
			for _, f := range b.Report().Features {
				said += f.Detail + "\n"
			}
			b.Close()
		}
		for _, secret := range []string{"hunter2", "vault"} {
			if strings.Contains(said, secret) {
				t.Errorf("endpoint %s: %q shows %q of its user info", ep, said, secret)
			}
		}
	}
}
