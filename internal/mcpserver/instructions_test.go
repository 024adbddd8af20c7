package mcpserver_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/mcpserver"
	"github.com/airlockhq/airlock/internal/sandbox/direct"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestInstructionsNameTheGrant: the model learns, at initialize and in a
// refusal, which paths it may touch and how, and which hosts it may reach,
// but not the denied paths or the secrets' names and values.
func TestInstructionsNameTheGrant(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"ws/hidden-stuff", "docs"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	g, err := grant.Parse([]byte(`
[paths]
read_write = ["ws"]
read_only = ["docs"]
deny = ["ws/hidden-stuff"]
[network]
hosts = ["api.example.com"]
[secrets.SUPER_TOKEN_NAME]
from = "env:AIRLOCK_TEST_SUPER_TOKEN"
tools = ["http_fetch"]
hosts = ["api.example.com"]
`), "g.toml", base)
	if err != nil {
		t.Fatal(err)
	}
	b, err := direct.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	records := t.TempDir()
	srv, err := mcpserver.New(&mcpserver.Options{
		Grant: g,
		Open: func(context.Context) (*broker.Session, error) {
			return broker.Open(&broker.Options{Grant: g, Backend: b, RecordsDir: records, ToolRoot: "/"})
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	go srv.Serve(context.Background(), st)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	granted := filepath.Join(base, "ws") + " (read-write), " + filepath.Join(base, "docs") + " (read-only)"
	ins := cs.InitializeResult().Instructions
	for _, want := range []string{"Granted paths: " + granted, "Working directory (relative paths start here): " + filepath.Join(base, "ws") + ".", "Network: only api.example.com"} {
		if !strings.Contains(ins, want) {
			t.Errorf("instructions lack %q:\n%s", want, ins)
		}
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "/etc/hostname"}})
	if err != nil {
		t.Fatal(err)
	}
	refusal := res.Content[0].(*mcp.TextContent).Text
	if !strings.Contains(refusal, "/etc/hostname is outside every granted path; granted: "+granted) {
		t.Errorf("refusal = %q, want the granted paths", refusal)
	}
	for _, text := range []string{ins, refusal} {
		for _, hidden := range []string{"hidden-stuff", "SUPER_TOKEN_NAME", "AIRLOCK_TEST_SUPER_TOKEN"} {
			if strings.Contains(text, hidden) {
				t.Errorf("%q reveals %q", text, hidden)
			}
		}
	}
}
