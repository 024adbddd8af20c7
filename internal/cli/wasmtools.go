package cli

import (
	"context"
	"encoding/json"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/wasm"
	"github.com/airlockhq/airlock/tool"
)

// wasmParts are a session's wasm tools: the engine that compiled them
// (once, in memory) and the tools.
type wasmParts struct {
	eng   *wasm.Engine
	tools *wasm.Tools
}

// openWasm loads the grant's wasm tools, if it has any.
func (p *sessionParts) openWasm() error {
	if len(p.Grant.WasmTools()) == 0 {
		return nil
	}
	ctx := context.Background()
	eng, err := wasm.NewEngine(ctx)
	if err != nil {
		return err
	}
	tools, err := wasm.NewTools(ctx, eng, p.Grant)
	if err != nil {
		eng.Close(ctx)
		return err
	}
	p.wasm = &wasmParts{eng: eng, tools: tools}
	return nil
}

// wasmCall returns the broker's hook for the wasm tools, nil without any.
func (p *sessionParts) wasmCall() broker.WasmCall {
	if p.wasm == nil {
		return nil
	}
	return wasmCallFor(p.wasm.tools)
}

// wasmCallFor adapts wasm tools to the broker's hook.
func wasmCallFor(tools *wasm.Tools) broker.WasmCall {
	return func(ctx context.Context, g *grant.Grant, name string, args json.RawMessage) broker.WasmOutcome {
		r, err := tools.Call(ctx, g, name, args)
		if err != nil {
			return broker.WasmOutcome{Err: err}
		}
		return broker.WasmOutcome{
			Stdout: r.Stdout, ExitCode: int(r.Outcome.ExitCode), Trap: r.Outcome.Trap,
			LimitsHit: r.Outcome.LimitsHit, Omitted: r.Outcome.OmittedBytes, Detail: r.Detail(),
		}
	}
}

func (p *sessionParts) closeWasm() {
	if p.wasm != nil {
		p.wasm.tools.Close()
		p.wasm.eng.Close(context.Background())
		p.wasm = nil
	}
}

// wasmDefs describes the grant's wasm tools for tool listings (airlock
// tools, MCP tools/list).
func wasmDefs(g *grant.Grant) []*tool.Def {
	var out []*tool.Def
	for _, w := range g.WasmTools() {
		out = append(out, &tool.Def{
			Name:        w.Name,
			Description: w.Description,
			Schema:      w.Schema,
			Hints:       tool.Hints{Title: w.Name, ReadOnly: len(w.ReadWrite) == 0, Destructive: len(w.ReadWrite) > 0, Idempotent: len(w.ReadWrite) == 0},
		})
	}
	return out
}
