package cli

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/airlockhq/airlock/internal/mcpserver"
	"github.com/airlockhq/airlock/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func toolsCommand() *command {
	c := &command{
		name:    "tools",
		summary: "print the enabled tools' schemas for MCP, OpenAI or Anthropic tool calling",
		usage: `airlock tools [--grant FILE] [--format mcp|openai|openai-responses|anthropic]

Prints the JSON schema and description of every tool the grant enables, in the
shape the named API takes, so any agent loop can offer airlock's tools:
  mcp               {"tools": [{"name", "title", "description", "inputSchema", "annotations"}]}
  openai            Chat Completions: [{"type": "function", "function": {"name", ...}}]
  openai-responses  Responses API: [{"type": "function", "name", "description", "parameters"}]
  anthropic         Messages API: [{"name", "description", "input_schema"}]`,
	}
	c.run = func(ctx context.Context, env *Env, args []string) int {
		fs := newFlags(c, env)
		var gf grantFlags
		fs.StringVar(&gf.grantFile, "grant", "", "grant `FILE`; its [tools] enabled list decides which tools are shown")
		format := fs.String("format", "mcp", "output shape: mcp, openai (Chat Completions), openai-responses (Responses API) or anthropic")
		if code := parseFlags(c, env, fs, args); code >= 0 {
			return code
		}
		if fs.NArg() != 0 {
			return usageError(env, c, "unexpected argument %q", fs.Arg(0))
		}
		g, err := gf.load(env)
		if err != nil {
			fmt.Fprintf(env.Stderr, "airlock tools: %v\n", err)
			return exitFailure
		}
		var defs []*tool.Def
		for _, d := range tool.All() {
			if g.ToolEnabled(d.Name) {
				defs = append(defs, d)
			}
		}
		defs = append(defs, wasmDefs(g)...)
		out, err := renderTools(defs, *format)
		if err != nil {
			fmt.Fprintf(env.Stderr, "airlock tools: %v\n", err)
			return exitUsage
		}
		fmt.Fprintf(env.Stdout, "%s\n", out)
		return exitOK
	}
	return c
}

// renderTools renders defs in the shape one tool-calling API takes.
func renderTools(defs []*tool.Def, format string) ([]byte, error) {
	var v any
	switch format {
	case "mcp":
		type mcpTool struct {
			Name        string               `json:"name"`
			Title       string               `json:"title"`
			Description string               `json:"description"`
			InputSchema json.RawMessage      `json:"inputSchema"`
			Annotations *mcp.ToolAnnotations `json:"annotations"`
		}
		list := []mcpTool{}
		for _, d := range defs {
			list = append(list, mcpTool{d.Name, d.Hints.Title, d.Description, d.Schema, mcpserver.Annotations(d)})
		}
		v = map[string]any{"tools": list}
	case "openai":
		type fn struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
			Strict      bool            `json:"strict"`
		}
		type oaTool struct {
			Type     string `json:"type"`
			Function fn     `json:"function"`
		}
		list := []oaTool{}
		for _, d := range defs {
			list = append(list, oaTool{"function", fn{d.Name, d.Description, d.Schema, false}})
		}
		v = list
	case "openai-responses":
		// The Responses API takes a flat function tool: no "function"
		// wrapper object.
		type respTool struct {
			Type        string          `json:"type"`
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Parameters  json.RawMessage `json:"parameters"`
			Strict      bool            `json:"strict"`
		}
		list := []respTool{}
		for _, d := range defs {
			list = append(list, respTool{"function", d.Name, d.Description, d.Schema, false})
		}
		v = list
	case "anthropic":
		type anTool struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"input_schema"`
		}
		list := []anTool{}
		for _, d := range defs {
			list = append(list, anTool{d.Name, d.Description, d.Schema})
		}
		v = list
	default:
		return nil, fmt.Errorf("--format %q: want mcp, openai (Chat Completions), openai-responses (Responses API) or anthropic", format)
	}
	return json.MarshalIndent(v, "", "  ")
}
