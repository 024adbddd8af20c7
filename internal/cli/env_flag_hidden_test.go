package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestEnvFlagValueNotEchoed: an --env argument without its NAME= (a value
// pasted alone, a secret among them) is refused without being printed.
func TestEnvFlagValueNotEchoed(t *testing.T) {
	const secret = "sk-live-SECRET-5f2a9c"
	for _, args := range [][]string{
		{"exec", "--env", secret, "--", "true"},
		{"exec", "--env", "=" + secret, "--", "true"},
		{"run", "--env", "has space " + secret, "capsule.wasm"},
	} {
		var stdout, stderr bytes.Buffer
		code := Main(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
		if code == 0 || !strings.Contains(stderr.String(), "--env wants NAME=VALUE") {
			t.Errorf("%q: exit %d, stderr %q; want a refusal naming --env", args, code, stderr.String())
		}
		if strings.Contains(stdout.String()+stderr.String(), secret) {
			t.Errorf("%q: the value was echoed: %q", args, stderr.String())
		}
	}
}
