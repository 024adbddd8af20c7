package interop_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeRefusesUnsafeSettings checks serve's usage errors: no listen
// address, no token on a non-loopback address, and weak tokens. None of them
// may print the token it was given.
func TestServeRefusesUnsafeSettings(t *testing.T) {
	w := newWorkspace(t)
	short := filepath.Join(w.root, "short-token")
	if err := os.WriteFile(short, []byte("hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"no listen", nil, nil, "usage: airlock serve"},
		{"no auth on all interfaces", []string{"--listen", "0.0.0.0:0", "--insecure-no-auth"}, nil, "--insecure-no-auth needs a loopback address"},
		{"no auth on a wildcard port", []string{"--listen", ":0", "--insecure-no-auth"}, nil, "--insecure-no-auth needs a loopback address"},
		{"short token file", []string{"--listen", "127.0.0.1:0", "--token-file", short}, nil, "shorter than 16"},
		{"short token env", []string{"--listen", "127.0.0.1:0"}, []string{"AIRLOCK_TOKEN=hunter2"}, "AIRLOCK_TOKEN: the token is shorter"},
		{"token with a space", []string{"--listen", "127.0.0.1:0"}, []string{"AIRLOCK_TOKEN=0123456789 abcdef0123"}, "printable ASCII"},
		{"missing token file", []string{"--listen", "127.0.0.1:0", "--token-file", filepath.Join(w.root, "nope")}, nil, "--token-file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, airlock(t), append([]string{"serve", "--root", w.root}, tc.args...)...)
			cmd.Env = append(append(os.Environ(), "AIRLOCK_STATE_DIR="+w.records), tc.env...)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 {
				t.Fatalf("exit %v, want 2; output:\n%s", err, out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Errorf("output lacks %q:\n%s", tc.want, out)
			}
			if strings.Contains(string(out), "hunter2") || strings.Contains(string(out), "0123456789 abcdef") {
				t.Errorf("the token leaked into the output:\n%s", out)
			}
		})
	}
}

// TestServeTokens checks where serve's token comes from: a generated one is
// printed once and works; a token file works; no auth works on loopback.
func TestServeTokens(t *testing.T) {
	w := newWorkspace(t)
	status := func(url, token string) int {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	t.Run("generated", func(t *testing.T) {
		s := startServeEnv(t, w, []string{"AIRLOCK_TOKEN="})
		if len(s.lines) < 2 || !strings.Contains(s.lines[0], "no --token-file or AIRLOCK_TOKEN") || len(s.lines[1]) != 64 {
			t.Fatalf("want the generated token on the line after the notice, got %q", s.lines)
		}
		token := s.lines[1]
		if got := status(s.base+"/metrics", token); got != http.StatusOK {
			t.Errorf("/metrics with the generated token: %d", got)
		}
		if got := status(s.base+"/metrics", ""); got != http.StatusUnauthorized {
			t.Errorf("/metrics without it: %d", got)
		}
		s.stop(t, 10*time.Second)
	})
	t.Run("token file", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "token")
		if err := os.WriteFile(file, []byte("  file-token-0123456789abcdef\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		s := startServeEnv(t, w, []string{"AIRLOCK_TOKEN="}, "--token-file", file)
		if got := status(s.base+"/metrics", "file-token-0123456789abcdef"); got != http.StatusOK {
			t.Errorf("/metrics with the file's token: %d", got)
		}
		for _, l := range s.lines {
			if strings.Contains(l, "file-token") {
				t.Errorf("the token was printed: %q", l)
			}
		}
		s.stop(t, 10*time.Second)
	})
	t.Run("no auth on loopback", func(t *testing.T) {
		s := startServeEnv(t, w, nil, "--insecure-no-auth")
		if got := status(s.base+"/metrics", ""); got != http.StatusOK {
			t.Errorf("/metrics without a token: %d", got)
		}
		s.stop(t, 10*time.Second)
	})
}
