package main_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportsStaySmall: the separate init exists to start faster than the
// airlock binary, so it links nothing only the broker needs (the MCP
// server, the grant parser, the WebAssembly runtime, remote hands).
func TestImportsStaySmall(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		for _, broker := range []string{
			"github.com/modelcontextprotocol/", "github.com/google/jsonschema-go", "github.com/tetratelabs/wazero",
			"github.com/BurntSushi/toml", "github.com/coder/websocket", "k8s.io/",
			"github.com/airlockhq/airlock/internal/broker", "github.com/airlockhq/airlock/internal/sandbox/linux",
		} {
			if strings.HasPrefix(dep, broker) && !strings.HasPrefix(dep, "github.com/airlockhq/airlock/internal/sandbox/linux/") {
				t.Errorf("airlock-init links %s, which only the broker needs", dep)
			}
		}
	}
}
