package mcpserver_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/mcpserver"
)

// TestSessionCap: serve keeps at most 64 MCP sessions (the default); one
// more initialize is refused with 503 and a JSON-RPC error naming the cap,
// without a session, and a session ended with DELETE makes room.
func TestSessionCap(t *testing.T) {
	f := newFixture(t, nil, nil)
	base := serveHTTP(t, f, testToken)
	var ids []string
	for range 64 {
		ids = append(ids, rawHTTPSession(t, base))
	}
	code, _, body, hdr := rpcPost(t, base, "", initialize, nil)
	var reply struct {
		ID    int `json:"id"`
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &reply); err != nil || code != http.StatusServiceUnavailable ||
		reply.ID != 1 || reply.Error.Code != -32000 || !strings.Contains(reply.Error.Message, "at most 64 MCP sessions") {
		t.Fatalf("initialize past the cap: %d %s (%v)", code, body, err)
	}
	if id := hdr.Get("Mcp-Session-Id"); id != "" {
		t.Errorf("the refused initialize got a session: %s", id)
	}
	if !hasLine(metricsHTTP(t, base), "airlock_mcp_sessions_refused_total 1") {
		t.Errorf("/metrics does not count the refusal")
	}

	req, _ := http.NewRequest(http.MethodDelete, base+mcpserver.PathMCP, nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set("Mcp-Session-Id", ids[0])
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	eventually(t, 10*time.Second, "the ended session gone", func() bool {
		return hasLine(metricsHTTP(t, base), "airlock_mcp_sessions_open 63")
	})
	rawHTTPSession(t, base)
}

// metricsHTTP reads base/metrics with the token.
func metricsHTTP(t *testing.T, base string) string {
	t.Helper()
	code, body, _ := get(t, base+mcpserver.PathMetrics, map[string]string{"Authorization": "Bearer " + testToken})
	if code != http.StatusOK {
		t.Fatalf("/metrics: %d", code)
	}
	return body
}
