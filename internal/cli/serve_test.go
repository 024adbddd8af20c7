package cli

import (
	"context"
	"log/slog"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/mcpserver"
)

// TestServeSessionsShareOneBudget: the MCP sessions of one `airlock serve`
// share one budget of sandboxes, so a second client cannot start background
// work once the first holds all a session may (16), and is told the budget
// is the server's.
func TestServeSessionsShareOneBudget(t *testing.T) {
	gf := &grantFlags{root: t.TempDir(), records: t.TempDir(), unsandboxed: true}
	env := &Env{Getenv: func(string) string { return "" }}
	srv, parts, err := newMCPServer(env, gf, slog.New(slog.DiscardHandler), true)
	if err != nil {
		t.Fatal(err)
	}
	defer parts.close()
	h, err := srv.Handler(&mcpserver.HTTPOptions{NoAuth: true})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(h)
	defer hs.Close()
	defer srv.Shutdown(context.Background())
	connect := func() *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: hs.URL + mcpserver.PathMCP, MaxRetries: -1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	background := func(cs *mcp.ClientSession) (string, bool) {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "shell", Arguments: map[string]any{"command": "sleep 600", "run_in_background": true}})
		if err != nil {
			t.Fatal(err)
		}
		return res.Content[0].(*mcp.TextContent).Text, res.IsError
	}
	// Two clients hold the whole budget, half each (one session may hold
	// no more); a third gets none.
	half := broker.DefaultMaxBackground / 2
	for n, cs := range []*mcp.ClientSession{connect(), connect()} {
		for i := range half {
			if text, isErr := background(cs); isErr {
				t.Fatalf("background work %d of client %d: %s", i, n, text)
			}
		}
		if text, isErr := background(cs); !isErr || !strings.Contains(text, "the most one session may") {
			t.Fatalf("client %d's background work past half the budget: %v %s", n, isErr, text)
		}
	}
	text, isErr := background(connect())
	if !isErr || !strings.Contains(text, "background commands are already running across this server's sessions") {
		t.Fatalf("the third client's first background work, with the others holding %d: %v %s", broker.DefaultMaxBackground, isErr, text)
	}
}
