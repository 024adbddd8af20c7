package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/airlockhq/airlock/internal/kube/kubereq"
	"github.com/airlockhq/airlock/internal/toolserver"
)

// ConnectOptions configure Connect.
type ConnectOptions struct {
	Clients *Clients
	TTL     time.Duration
	Mode    Mode
	// Key is the broker's session key (kubereq.ReadKey), needed with the
	// request's session id: Options.Key.
	Key []byte
	// ReadyTimeout bounds the wait for the connection's pod or claim to
	// be ready (default DefaultReadyTimeout).
	ReadyTimeout time.Duration
	// Port overrides the tool-server's port (tests).
	Port int
	// Broker names the broker in labels (default ParentBrokerID: the
	// process that spawned the helper).
	Broker string
	Logger *slog.Logger
}

// Connect is the airlock-kube helper's connection: it removes what dead
// brokers left in the namespace, obtains the session's hands, relays
// frames between the broker (in, out) and the tool-server in the pod
// until either side ends, and then releases the hands. With the broker's
// session id (req.Session) it releases only this connection's pod or
// SandboxClaim: the session's Secret, policy and workspace claim wait for
// the broker's next connection, and its Release (airlock-kube release);
// without one, everything.
func Connect(ctx context.Context, req kubereq.Request, o *ConnectOptions, in io.Reader, out io.Writer) error {
	t, err := ParseTarget(req.Target)
	if err != nil {
		return err
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	h := HandsFor(req)
	h.Port = o.Port
	mode, err := pickMode(o.Clients, o.Mode, &h)
	if err != nil {
		return fmt.Errorf("%s: %w", t, err)
	}
	sandbox := mode == ModeSandbox
	if !sandbox && o.Mode == ModeAuto && (h.WorkspaceSize != "" || h.userns() || h.RuntimeClass != "") {
		sandbox, _ = HasSandboxAPI(o.Clients) // sweep the claims too
	}
	broker := o.Broker
	if broker == "" {
		broker = ParentBrokerID()
	}
	// The broker's own session is live, whatever its expiry says: this
	// connection takes it up and moves the expiry on.
	own := func(m metav1.Object) bool {
		l := m.GetLabels()
		return req.Session != "" && l[LabelSession] == req.Session && l[LabelBroker] == broker
	}
	left, err := sweep(ctx, o.Clients, t.Namespace, sandbox, own)
	for _, l := range left {
		logger.Info("removed a leftover", "kind", l.Kind, "name", l.Name, "why", l.Why)
	}
	if err != nil {
		logger.Warn("removing leftovers", "err", err)
	}
	s, err := Acquire(ctx, &Options{Target: t, Clients: o.Clients, Hands: h, TTL: o.TTL, Mode: mode, Session: req.Session, Key: o.Key, Broker: broker, Logger: logger})
	if err != nil {
		return err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 25*time.Second)
		defer cancel()
		end := s.Release
		if req.Session != "" {
			end = s.Disconnect
		}
		if err := end(rctx); err != nil {
			logger.Warn("releasing the hands", "err", err)
		}
	}()
	wait := o.ReadyTimeout
	if wait <= 0 {
		wait = DefaultReadyTimeout
	}
	dctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	conn, err := s.Dial(dctx)
	if err != nil {
		return fmt.Errorf("%s: reaching the hands: %w", t, err)
	}
	defer conn.Close()
	return relay(ctx, toolserver.StreamConn(in, out, nil), conn)
}

// DefaultReadyTimeout bounds the helper's wait for its pod to be ready:
// less than the broker's connection attempt (toolserver.Options.
// ConnectTimeout, 2 minutes for kube://), so the helper, not the broker's
// kill, ends a pod that never gets ready, deletes it and says why.
const DefaultReadyTimeout = 90 * time.Second

// Release is the airlock-kube helper's end of a broker's session
// (req.Session): it deletes the session's pods, SandboxClaims, workspace
// claim, policy and Secret, those labelled with this broker (o.Broker,
// default ParentBrokerID) only.
func Release(ctx context.Context, req kubereq.Request, o *ConnectOptions) error {
	t, err := ParseTarget(req.Target)
	if err != nil {
		return err
	}
	if req.Session == "" {
		return fmt.Errorf("%s: the request names no session to release", t)
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	broker := o.Broker
	if broker == "" {
		broker = ParentBrokerID()
	}
	claims := o.Mode == ModeSandbox
	if o.Mode == ModeAuto {
		if claims, err = HasSandboxAPI(o.Clients); err != nil {
			logger.Warn("asking the cluster whether it serves SandboxClaims", "err", err)
		}
	}
	gone, err := ReleaseSession(ctx, o.Clients, t, req.Session, broker, claims)
	for _, l := range gone {
		logger.Info("released", "kind", l.Kind, "name", l.Name)
	}
	return err
}

// relay copies frames both ways until one side ends; only the broker's
// closing is a clean end: hands that end are an error the broker sees as
// a lost connection.
func relay(ctx context.Context, broker, hands toolserver.Conn) error {
	errc := make(chan error, 2)
	pipe := func(from, to toolserver.Conn, what string) {
		for {
			p, err := from.Recv(ctx)
			if err != nil {
				if errors.Is(err, io.EOF) && from == broker {
					errc <- nil // the broker closed: the clean end
					return
				}
				errc <- fmt.Errorf("%s: %w", what, err)
				return
			}
			if err := to.Send(ctx, p); err != nil {
				errc <- fmt.Errorf("%s: %w", what, err)
				return
			}
		}
	}
	go pipe(broker, hands, "from the broker")
	go pipe(hands, broker, "from the hands")
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		return nil
	}
}
