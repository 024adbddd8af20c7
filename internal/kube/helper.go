package kube

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/airlockhq/airlock/internal/kube/kubereq"
	"github.com/airlockhq/airlock/internal/toolserver"
)

// ConnectOptions configure Connect.
type ConnectOptions struct {
	Clients *Clients
	TTL     time.Duration
	Mode    Mode
	// Port overrides the tool-server's port (tests).
	Port   int
	Logger *slog.Logger
}

// Connect is the airlock-kube helper's connection: it removes what dead
// brokers left in the namespace, obtains the session's hands, relays
// frames between the broker (in, out) and the tool-server in the pod
// until either side ends, and then releases the hands.
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
	if !sandbox && o.Mode == ModeAuto && h.WorkspaceSize != "" {
		sandbox, _ = HasSandboxAPI(o.Clients) // sweep the claims too
	}
	left, err := Sweep(ctx, o.Clients, t.Namespace, sandbox)
	for _, l := range left {
		logger.Info("removed a leftover", "kind", l.Kind, "name", l.Name, "why", l.Why)
	}
	if err != nil {
		logger.Warn("removing leftovers", "err", err)
	}
	s, err := Acquire(ctx, &Options{Target: t, Clients: o.Clients, Hands: h, TTL: o.TTL, Mode: mode, Logger: logger})
	if err != nil {
		return err
	}
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 25*time.Second)
		defer cancel()
		if err := s.Release(rctx); err != nil {
			logger.Warn("releasing the hands", "err", err)
		}
	}()
	conn, err := s.Dial(ctx)
	if err != nil {
		return fmt.Errorf("%s: reaching the hands: %w", t, err)
	}
	defer conn.Close()
	return relay(ctx, toolserver.StreamConn(in, out, nil), conn)
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
