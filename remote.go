package airlock

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/kube/kubereq"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/secret"
	"github.com/airlockhq/airlock/internal/session"
	"github.com/airlockhq/airlock/internal/toolserver"
)

// Remote runs a session's sandboxes on remote hands, an `airlock
// tool-server` on another machine or in a container, over one persistent
// connection: the grant, the secrets and the audit log stay in this
// process. A call that carries a secret still runs in a local sandbox.
// See docs/remote.md.
type Remote struct {
	// Endpoint is "stdio:CMD ARGS..." (spawn CMD and speak over its stdin
	// and stdout), "ws://HOST:PORT" (loopback only), "wss://HOST:PORT" or
	// "kube://NAMESPACE/TEMPLATE" (a pod per connection in a Kubernetes
	// cluster, through the airlock-kube helper; see docs/kubernetes.md).
	Endpoint string
	// Token is a WebSocket endpoint's bearer token.
	Token string
	// TLS configures a wss:// endpoint (RootCAs for a private CA); nil
	// means the system's roots.
	TLS *tls.Config
	// Heartbeat is the connection's heartbeat interval (default 1s); hands
	// silent for three intervals are taken for dead and reconnected to.
	Heartbeat time.Duration
}

// String describes r for people, as fmt's %v and %+v print it, without the
// token's value.
func (r Remote) String() string {
	type plain Remote // no String method: printed field by field
	c := plain(r)
	if c.Token != "" {
		c.Token = redacted
	}
	return fmt.Sprintf("%+v", c)
}

// GoString is String, for %#v.
func (r Remote) GoString() string { return r.String() }

// LogValue is String, for log/slog's handlers (the JSON one included).
func (r Remote) LogValue() slog.Value { return slog.StringValue(r.String()) }

// remoteBackend connects to the hands that o.Remote, or else the grant's
// [remote] table, names; nil when neither names any.
func remoteBackend(o *Options, g *grant.Grant, local sandbox.Backend) (*toolserver.Backend, error) {
	var r Remote
	switch {
	case o.Remote != nil:
		r = *o.Remote
	case g.Remote().Endpoint != "":
		gr := g.Remote()
		r.Endpoint = gr.Endpoint
		if gr.Token != "" {
			v, err := secret.Load(gr.Token, os.Getenv)
			if err != nil {
				return nil, fmt.Errorf("the grant's remote.token: %w", err)
			}
			r.Token = strings.TrimSpace(v)
		}
		if gr.CA != "" {
			tc, err := toolserver.CAConfig(gr.CA)
			if err != nil {
				return nil, fmt.Errorf("the grant's remote.ca: %w", err)
			}
			r.TLS = tc
		}
	default:
		return nil, nil
	}
	to := &toolserver.Options{
		Endpoint: r.Endpoint, Token: r.Token, TLS: r.TLS, Heartbeat: r.Heartbeat,
		Local: local, Logger: o.Logger,
	}
	if strings.HasPrefix(r.Endpoint, kubereq.Scheme) {
		req, err := kubereq.FromGrant(r.Endpoint, g)
		if err != nil {
			return nil, fmt.Errorf("remote: %w", err)
		}
		to.Kube = req.Encode()
	}
	return toolserver.New(context.Background(), to)
}

// remotePrivate are the files of the hands that remoteBackend reaches that
// no sandbox may see, as the CLI's remote flags keep them: the grant's
// token file (a sandbox that read it could drive the hands itself) and, for
// a kube:// endpoint, the cluster's credentials.
func remotePrivate(o *Options, g *grant.Grant) []string {
	endpoint := g.Remote().Endpoint
	var out []string
	if o.Remote != nil {
		endpoint = o.Remote.Endpoint
	} else if p, ok := strings.CutPrefix(g.Remote().Token, "file:"); ok {
		out = append(out, p)
	}
	if strings.HasPrefix(endpoint, kubereq.Scheme) {
		out = append(out, session.KubeconfigFiles(os.Getenv)...)
	}
	return out
}
