package kube

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os/signal"
	"syscall"
	"time"

	"github.com/airlockhq/airlock/internal/kube/kubereq"
)

// Main is the airlock-kube helper's command line; it returns the exit
// status. newClients is LoadClients unless a test says otherwise.
func Main(ctx context.Context, args []string, in io.Reader, out, errw io.Writer, getenv func(string) string) int {
	return mainWith(ctx, args, in, out, errw, getenv, LoadClients)
}

func mainWith(ctx context.Context, args []string, in io.Reader, out, errw io.Writer, getenv func(string) string, newClients func() (*Clients, error)) int {
	usage := func() int {
		fmt.Fprintln(errw, "usage: airlock-kube connect REQUEST | release REQUEST | doctor [--json] [--runtime-class RC] [--pod-security P] kube://NS/TEMPLATE | sweep kube://NS/TEMPLATE | pool-secret [--ttl D] kube://NS/TEMPLATE")
		return 2
	}
	if len(args) == 0 {
		return usage()
	}
	fail := func(err error) int {
		fmt.Fprintf(errw, "airlock-kube: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	logger := slog.New(slog.NewTextHandler(errw, &slog.HandlerOptions{Level: slog.LevelWarn}))
	switch args[0] {
	case "connect", "release":
		if len(args) != 2 {
			return usage()
		}
		req, err := kubereq.Decode(args[1])
		if err != nil {
			return fail(err)
		}
		var key []byte
		if args[0] == "connect" && req.Session != "" {
			// The broker's session key comes first on stdin (kubereq.WriteKey).
			if key, err = kubereq.ReadKey(in); err != nil {
				return fail(err)
			}
		}
		var ttl time.Duration
		if v := getenv("AIRLOCK_KUBE_TTL"); v != "" {
			if ttl, err = time.ParseDuration(v); err != nil || ttl <= 0 {
				return fail(fmt.Errorf("$AIRLOCK_KUBE_TTL %q is not a positive duration (12h)", v))
			}
		}
		c, err := newClients()
		if err != nil {
			return fail(err)
		}
		o := &ConnectOptions{Clients: c, TTL: ttl, Key: key, Logger: logger}
		if args[0] == "release" {
			err = Release(ctx, req, o)
		} else {
			err = Connect(ctx, req, o, in, out)
		}
		if err != nil {
			return fail(err)
		}
		return 0
	case "doctor", "sweep", "pool-secret":
		fs := flag.NewFlagSet("airlock-kube "+args[0], flag.ContinueOnError)
		fs.SetOutput(errw)
		asJSON := fs.Bool("json", false, "print the report as JSON")
		rc := fs.String("runtime-class", "", "check that RuntimeClass `RC` exists")
		ps := fs.String("pod-security", "", "doctor: the grant's remote.pod_security `P` (restricted or userns): check that the namespace admits such pods")
		ttl := fs.Duration("ttl", 30*24*time.Hour, "pool-secret: how long the pool's certificate is valid")
		if err := fs.Parse(args[1:]); err != nil || fs.NArg() != 1 {
			return usage()
		}
		t, err := ParseTarget(fs.Arg(0))
		if err != nil {
			return fail(err)
		}
		c, err := newClients()
		if err != nil {
			return fail(err)
		}
		if args[0] == "pool-secret" {
			if err := CreatePoolSecret(ctx, c, t, *ttl); err != nil {
				return fail(err)
			}
			fmt.Fprintf(out, "created Secret %s/%s (a new token and certificate; restart the pool's pods to take it)\n", t.Namespace, PoolSecret(t.Template))
			return 0
		}
		if args[0] == "sweep" {
			sandbox, _ := HasSandboxAPI(c)
			left, err := Sweep(ctx, c, t.Namespace, sandbox)
			for _, l := range left {
				fmt.Fprintf(out, "removed %s %s: %s\n", l.Kind, l.Name, l.Why)
			}
			if err != nil {
				return fail(err)
			}
			return 0
		}
		fs2 := Doctor(ctx, c, t, *rc, *ps)
		ready := true
		for _, f := range fs2 {
			if f.Required && !f.OK {
				ready = false
			}
		}
		if *asJSON {
			b, _ := json.MarshalIndent(struct {
				Target   string    `json:"target"`
				Findings []Finding `json:"findings"`
				Ready    bool      `json:"ready"`
			}{t.String(), fs2, ready}, "", "  ")
			fmt.Fprintf(out, "%s\n", b)
		} else {
			fmt.Fprintf(out, "%s:\n", t)
			for _, f := range fs2 {
				mark := "ok     "
				switch {
				case !f.OK && f.Required:
					mark = "MISSING"
				case !f.OK:
					mark = "absent "
				}
				fmt.Fprintf(out, "  %s %s", mark, f.Name)
				if f.Detail != "" {
					fmt.Fprintf(out, ": %s", f.Detail)
				}
				fmt.Fprintln(out)
			}
		}
		if !ready {
			return 1
		}
		return 0
	}
	return usage()
}
