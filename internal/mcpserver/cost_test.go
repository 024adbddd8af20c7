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
	"github.com/airlockhq/airlock/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestWebSearchListedAndCostInMeta (issue 18): with a provider in the
// grant, web_search is in tools/list with its hints; every call's _meta
// carries what it cost, and /metrics counts it.
func TestWebSearchListedAndCostInMeta(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "f.txt"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := grant.Parse([]byte(`
[paths]
read_write = ["."]
[network]
hosts = ["api.tavily.com"]
[tools.web_search]
provider = "tavily"
`), "cost.toml", root)
	if err != nil {
		t.Fatal(err)
	}
	var tools []*tool.Def
	for _, d := range tool.All() {
		if g.ToolEnabled(d.Name) {
			tools = append(tools, d)
		}
	}
	m := mcpserver.NewMetrics()
	backend := m.Backend(sandboxtest.Native(t))
	records := t.TempDir()
	f := &fixture{root: root, records: records}
	f.open = func(context.Context) (*broker.Session, error) {
		return broker.Open(&broker.Options{Grant: g, Backend: backend, RecordsDir: records, ToolRoot: "/"})
	}
	if f.srv, err = mcpserver.New(&mcpserver.Options{Open: f.open, Metrics: m, Tools: tools}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		f.srv.Shutdown(ctx)
	})
	cs := connectStdio(t, f, nil)
	list, err := cs.ListTools(context.Background(), &mcp.ListToolsParams{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, tl := range list.Tools {
		if tl.Name == "web_search" {
			found = true
			if a := tl.Annotations; a == nil || !a.ReadOnlyHint || a.OpenWorldHint == nil || !*a.OpenWorldHint {
				t.Errorf("web_search annotations %+v", a)
			}
		}
	}
	if !found {
		t.Fatal("web_search is not in tools/list")
	}
	res := call(t, cs, "read_file", map[string]any{"path": filepath.Join(root, "f.txt")})
	meta := callMeta(t, res)
	if meta.Cost == nil || meta.Cost.WallSeconds <= 0 || meta.Cost.PeakMemory <= 0 {
		t.Fatalf("_meta cost %+v", meta.Cost)
	}
	if text := metrics(t, f.srv); !strings.Contains(text, `airlock_cost_wall_seconds_total{tool="read_file"}`) {
		t.Errorf("/metrics has no cost counters:\n%s", text)
	}
}
