package wasm

import (
	"context"
	"encoding/json"
	"unicode/utf8"

	"github.com/airlockhq/airlock/wire"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
)

// HostModule is the name of the module whose functions let a wasm module
// call the session's tools.
//
// The ABI, two functions, all lengths and offsets in the module's memory:
//
//	call(tool_ptr, tool_len, args_ptr, args_len i32) -> i64
//	    Runs the tool named by the UTF-8 bytes at tool_ptr with the JSON
//	    arguments at args_ptr (the wire contract's args object). Returns
//	    the length of the result, a wire.ToolOutput as JSON, which the
//	    host holds until result is called; or a negative Err* code.
//	result(buf_ptr, buf_len i32) -> i32
//	    Copies the held result to buf_ptr (at most buf_len bytes; pass the
//	    length call returned) and forgets it. Returns the bytes copied or
//	    a negative Err* code.
//
// A refused or failed call is a result like any other (is_error set, the
// content saying why); negative codes are for calls the host could not
// even read.
const HostModule = "airlock"

// Error codes of the host functions.
const (
	ErrFault    = -1 // a pointer and length outside the module's memory
	ErrBadName  = -2 // a tool name that is empty, too long or not UTF-8
	ErrTooLarge = -3 // arguments past MaxArgs
	ErrNoResult = -4 // result called with no result held
)

// Bounds on what a module hands the host.
const (
	maxToolName = 64
	// MaxArgs is the largest arguments a module may pass to one call.
	MaxArgs = 16 << 20
)

// ToolFunc serves one tool call of a module: the broker's Session.Call
// for capsules. It must be safe for concurrent use when the same function
// serves several runs at once. Its output is returned to the module as it
// is.
type ToolFunc func(ctx context.Context, tool string, args json.RawMessage) wire.ToolOutput

type hostKey struct{}

// hostState is one run's host-side state.
type hostState struct {
	tools   ToolFunc
	pending []byte
	held    bool
}

func withHost(ctx context.Context, h *hostState) context.Context {
	return context.WithValue(ctx, hostKey{}, h)
}

func instantiateHost(ctx context.Context, rt wazero.Runtime) error {
	i32, i64 := api.ValueTypeI32, api.ValueTypeI64
	_, err := rt.NewHostModuleBuilder(HostModule).
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(hostCall), []api.ValueType{i32, i32, i32, i32}, []api.ValueType{i64}).
		WithParameterNames("tool_ptr", "tool_len", "args_ptr", "args_len").Export("call").
		NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(hostResult), []api.ValueType{i32, i32}, []api.ValueType{i32}).
		WithParameterNames("buf_ptr", "buf_len").Export("result").
		Instantiate(ctx)
	return err
}

// hostCall implements airlock.call.
func hostCall(ctx context.Context, mod api.Module, stack []uint64) {
	h, _ := ctx.Value(hostKey{}).(*hostState)
	toolPtr, toolLen := api.DecodeU32(stack[0]), api.DecodeU32(stack[1])
	argsPtr, argsLen := api.DecodeU32(stack[2]), api.DecodeU32(stack[3])
	stack[0] = uint64(callTool(ctx, h, mod.Memory(), toolPtr, toolLen, argsPtr, argsLen))
}

// callTool reads a call out of mem, runs it and holds its result.
func callTool(ctx context.Context, h *hostState, mem api.Memory, toolPtr, toolLen, argsPtr, argsLen uint32) int64 {
	if h == nil || mem == nil {
		return ErrFault
	}
	if toolLen == 0 || toolLen > maxToolName {
		return ErrBadName
	}
	if argsLen > MaxArgs {
		return ErrTooLarge
	}
	name, ok := mem.Read(toolPtr, toolLen)
	if !ok {
		return ErrFault
	}
	if !utf8.Valid(name) {
		return ErrBadName
	}
	args, ok := mem.Read(argsPtr, argsLen)
	if !ok {
		return ErrFault
	}
	// Copies: the module's memory may move or change under the call.
	tool := string(name)
	raw := json.RawMessage(append([]byte(nil), args...))
	var out wire.ToolOutput
	if h.tools == nil {
		out = wire.ToolOutput{Content: "[airlock: this module may call no tools]", IsError: true}
	} else {
		out = h.tools(ctx, tool, raw)
	}
	b, err := json.Marshal(out)
	if err != nil {
		b = []byte(`{"content":"[airlock: the tool's result could not be encoded]","is_error":true}`)
	}
	h.pending, h.held = b, true
	return int64(len(b))
}

// hostResult implements airlock.result.
func hostResult(ctx context.Context, mod api.Module, stack []uint64) {
	h, _ := ctx.Value(hostKey{}).(*hostState)
	ptr, n := api.DecodeU32(stack[0]), api.DecodeU32(stack[1])
	stack[0] = api.EncodeI32(copyResult(h, mod.Memory(), ptr, n))
}

func copyResult(h *hostState, mem api.Memory, ptr, n uint32) int32 {
	if h == nil || mem == nil {
		return ErrFault
	}
	if !h.held {
		return ErrNoResult
	}
	b := h.pending
	if uint32(len(b)) < n {
		n = uint32(len(b))
	}
	if !mem.Write(ptr, b[:n]) {
		return ErrFault
	}
	h.pending, h.held = nil, false
	return int32(n)
}
