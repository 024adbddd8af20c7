package airlock_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/airlockhq/airlock"
)

// TestOptionsPrintNoSecret: the values of Options.Secrets and the remote
// token never show when a program prints or logs its Options or Remote
// (fmt's %v, %+v, %#v and %s; slog's text and JSON handlers), as a
// program that logs how it opened a session does; the names do.
func TestOptionsPrintNoSecret(t *testing.T) {
	const secret, token = "ghp_secret-value-0123456789", "hands-token-0123456789"
	r := &airlock.Remote{Endpoint: "wss://hands.example:8443", Token: token}
	o := &airlock.Options{Dir: "/w", Secrets: map[string]string{"GITHUB_TOKEN": secret}, Remote: r}
	var shown []string
	for _, v := range []any{o, *o, r, *r} {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
			shown = append(shown, fmt.Sprintf(verb, v))
		}
		for _, h := range []func(*bytes.Buffer) slog.Handler{
			func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) },
			func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) },
		} {
			var b bytes.Buffer
			slog.New(h(&b)).Info("opening", "opts", v)
			shown = append(shown, b.String())
		}
	}
	for _, s := range shown {
		if strings.Contains(s, secret) || strings.Contains(s, token) {
			t.Errorf("printed a secret value: %s", s)
		}
	}
	if s := fmt.Sprintf("%+v", o); !strings.Contains(s, "GITHUB_TOKEN") || !strings.Contains(s, "/w") {
		t.Errorf("%%+v of Options lost what is not secret: %s", s)
	}
	if s := fmt.Sprintf("%+v", r); !strings.Contains(s, "wss://hands.example:8443") {
		t.Errorf("%%+v of Remote lost its endpoint: %s", s)
	}
}
