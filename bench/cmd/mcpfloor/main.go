// Command mcpfloor is the floor of the bench's MCP section: an MCP server
// built on the same Go SDK as airlock's, over stdio, whose read_file reads
// the file in its own process, with no sandbox, no grant and no audit
// record. What it costs over a spawned cat is what the MCP round trip alone
// costs (the client's and the server's SDK, the pipes, the wake-ups);
// what airlock mcp costs over it is airlock's own share of a call.
//
// It reads any path it is given: it is a benchmark yardstick, not a server
// to give an agent.
//
//	mcpfloor    (speaks MCP on stdin and stdout until stdin ends)
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// readArgs are read_file's arguments, as airlock's read_file names them.
type readArgs struct {
	Path string `json:"path" jsonschema:"the file to read"`
}

func main() {
	s := mcp.NewServer(&mcp.Implementation{Name: "mcpfloor", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "read_file", Description: "Read a file, in the server's own process."},
		func(_ context.Context, _ *mcp.CallToolRequest, a readArgs) (*mcp.CallToolResult, any, error) {
			b, err := os.ReadFile(a.Path)
			if err != nil {
				return nil, nil, fmt.Errorf("reading %s: %w", a.Path, err)
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil, nil
		})
	if err := s.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "mcpfloor:", err)
		os.Exit(1)
	}
}
