package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
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

// remoteFlags pick remote hands (airlock tool-server) for a command's
// sandboxes: the brain (grant, secrets, audit) stays here.
type remoteFlags struct {
	endpoint  string
	tokenFile string
	caFile    string
	heartbeat time.Duration
	// tokenSource is the grant's [remote] token: "env:VAR" or "file:PATH".
	tokenSource string
	// grant is the session's grant: a kube:// endpoint's pods mount its paths.
	grant *grant.Grant
}

// fromGrant returns f, or the grant's [remote] table when no --remote flag
// names an endpoint.
func (f remoteFlags) fromGrant(g *grant.Grant) remoteFlags {
	if f.endpoint != "" {
		f.grant = g
		return f
	}
	r := g.Remote()
	return remoteFlags{endpoint: r.Endpoint, caFile: r.CA, tokenSource: r.Token, heartbeat: f.heartbeat, grant: g}
}

func (f *remoteFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.endpoint, "remote", "", "run sandboxes on remote hands: `stdio:CMD ARGS...`, ws://HOST:PORT or wss://HOST:PORT (an airlock tool-server), or kube://NAMESPACE/TEMPLATE (a pod per session, see docs/kubernetes.md)")
	fs.StringVar(&f.tokenFile, "remote-token-file", "", "`FILE` holding the WebSocket tool-server's bearer token (default $AIRLOCK_REMOTE_TOKEN)")
	fs.StringVar(&f.caFile, "remote-ca", "", "PEM `FILE` of the CA that signed a wss:// tool-server's certificate (default: the system's roots)")
	fs.DurationVar(&f.heartbeat, "remote-heartbeat", toolserver.DefaultHeartbeat, "heartbeat interval on the remote connection (at most "+toolserver.MaxHeartbeat.String()+"); hands silent for 3 intervals are taken for dead")
}

// wrap returns a backend that runs sandboxes on the remote hands, and
// local for the calls that carry a secret. private collects the files no
// sandbox may see (the token file).
func (f *remoteFlags) wrap(ctx context.Context, env *Env, local sandbox.Backend, private *[]string) (sandbox.Backend, error) {
	o := &toolserver.Options{Endpoint: f.endpoint, Local: local, Heartbeat: f.heartbeat, Stderr: env.Stderr, Getenv: env.Getenv}
	if strings.HasPrefix(f.endpoint, kubereq.Scheme) {
		if f.tokenFile != "" || f.caFile != "" {
			return nil, errors.New("--remote " + toolserver.DescribeEndpoint(f.endpoint) + ": a kube endpoint takes no --remote-token-file or --remote-ca: each session gets its own")
		}
		if f.grant == nil {
			return nil, errors.New("--remote " + toolserver.DescribeEndpoint(f.endpoint) + ": no grant to build the hands' pod from")
		}
		req, err := kubereq.FromGrant(f.endpoint, f.grant)
		if err != nil {
			return nil, fmt.Errorf("--remote: %w", err)
		}
		o.Kube = req.Encode()
		// The cluster's credentials are no sandbox's business.
		*private = append(*private, session.KubeconfigFiles(env.Getenv)...)
	}
	if strings.HasPrefix(f.endpoint, "ws://") || strings.HasPrefix(f.endpoint, "wss://") {
		tok := env.Getenv("AIRLOCK_REMOTE_TOKEN")
		if f.tokenSource != "" {
			v, err := secret.Load(f.tokenSource, env.Getenv)
			if err != nil {
				return nil, fmt.Errorf("the grant's remote.token: %w", err)
			}
			tok = strings.TrimSpace(v)
			if p, ok := strings.CutPrefix(f.tokenSource, "file:"); ok {
				*private = append(*private, p)
			}
		}
		if f.tokenFile != "" {
			b, err := os.ReadFile(f.tokenFile)
			if err != nil {
				return nil, fmt.Errorf("--remote-token-file: %w", err)
			}
			tok = strings.TrimSpace(string(b))
			*private = append(*private, f.tokenFile)
		}
		if tok == "" {
			return nil, errors.New("--remote " + toolserver.DescribeEndpoint(f.endpoint) + ": a WebSocket tool-server needs its token: --remote-token-file FILE or $AIRLOCK_REMOTE_TOKEN")
		}
		o.Token = tok
	}
	if f.caFile != "" {
		// It decides whom later sessions trust with the token: no
		// sandbox may rewrite it (nor needs to see it).
		*private = append(*private, f.caFile)
		tc, err := toolserver.CAConfig(f.caFile)
		if err != nil {
			return nil, fmt.Errorf("--remote-ca: %w", err)
		}
		o.TLS = tc
	}
	b, err := toolserver.New(ctx, o)
	if err != nil {
		return nil, err
	}
	return b, nil
}
