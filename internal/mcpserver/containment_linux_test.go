package mcpserver_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/mcpserver"
	"github.com/airlockhq/airlock/internal/sandboxtest"
)

// TestContainmentOverMCP drives issue 19's containment cases through a
// real MCP session on the native backend, over stdio and HTTP: moving an
// ancestor of a denied path or of .git fails, a symlink at a protected name
// is covered and the session stays usable, placeholders are not listed, a
// missing denied path cannot be created, and the grant file in the tree
// stays read-only.
func TestContainmentOverMCP(t *testing.T) {
	backend := sandboxtest.Native(t)
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			root, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			const canary = "c4n4ry-5ecr3t"
			for p, content := range map[string]string{
				"a/secret": canary, ".git/HEAD": "ref: refs/heads/main\n", ".git/config": "original\n",
				"grant.toml": "[paths]\nread_write = [\".\"]\ndeny = [\"a/secret\", \".env\"]\n",
			} {
				full := filepath.Join(root, p)
				if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.MkdirAll(filepath.Join(root, "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("/nonexistent", filepath.Join(root, "sub/.bashrc")); err != nil {
				t.Fatal(err)
			}
			g, err := grant.Load(filepath.Join(root, "grant.toml"))
			if err != nil {
				t.Fatal(err)
			}
			f := &fixture{root: root, records: t.TempDir()}
			m := mcpserver.NewMetrics()
			wrapped := m.Backend(backend)
			f.open = func(context.Context) (*broker.Session, error) {
				return broker.Open(&broker.Options{Grant: g, Backend: wrapped, RecordsDir: f.records, ToolRoot: "/"})
			}
			if f.srv, err = mcpserver.New(&mcpserver.Options{Open: f.open, Metrics: m}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				f.srv.Shutdown(ctx)
			})
			cs := tr.connect(t, f, nil)
			sh := func(cmd string) string {
				return text(t, call(t, cs, "shell", map[string]any{"command": cmd, "cwd": root}))
			}
			for _, c := range []struct{ cmd, want string }{
				{"mv a a2; cat a2/secret a/secret; true", "busy"},
				{"mv .git .g && printf '[core]\\n\\tfsmonitor = touch pwned\\n' > .git/config; true", "busy"},
				{"cat sub/.bashrc; echo usable", "usable"},
				{"echo K=1 > .env; true", ".env"},
				{"echo hacked >> grant.toml; true", "Read-only file system"},
			} {
				out := sh(c.cmd)
				if !strings.Contains(out, c.want) || strings.Contains(out, canary) {
					t.Errorf("%s: output %q, want %q and no secret", c.cmd, out, c.want)
				}
			}
			if out := text(t, call(t, cs, "read_file", map[string]any{"path": filepath.Join(root, "a2/secret")})); strings.Contains(out, canary) {
				t.Errorf("read_file a2/secret: %q", out)
			}
			if out := text(t, call(t, cs, "glob", map[string]any{"pattern": "*", "path": root})); strings.Contains(out, ".bashrc") || strings.Contains(out, ".vscode") || strings.Contains(out, ".env") {
				t.Errorf("glob lists placeholders: %q", out)
			}
			for p, want := range map[string]string{"a/secret": canary, ".git/config": "original\n"} {
				if got, err := os.ReadFile(filepath.Join(root, p)); err != nil || string(got) != want {
					t.Errorf("host %s = %q, %v; want %q", p, got, err, want)
				}
			}
			if b, _ := os.ReadFile(filepath.Join(root, "grant.toml")); strings.Contains(string(b), "hacked") {
				t.Errorf("the grant file was rewritten: %q", b)
			}
			for _, p := range []string{".g", "a2"} {
				if _, err := os.Lstat(filepath.Join(root, p)); err == nil {
					t.Errorf("%s exists on the host", p)
				}
			}
			// (.env may still be the empty placeholder while the last
			// sandbox's teardown finishes; it never holds what was written.)
			if b, err := os.ReadFile(filepath.Join(root, ".env")); err == nil && len(b) > 0 {
				t.Errorf(".env was written on the host: %q", b)
			}
		})
	}
}
