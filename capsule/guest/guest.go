// Package guest is what a capsule (a WebAssembly agent run by `airlock run`)
// imports to call the session's tools. Build the capsule with
// GOOS=wasip1 GOARCH=wasm; each call goes through airlock's broker under the
// capsule's grant, exactly as an MCP or CLI call would, and returns the
// wire contract's ToolOutput. Refusals and tool failures are results (IsError
// set, Content saying why), never Go errors; an error means the host could
// not read the call at all.
//
//	out, err := guest.Call("read_file", map[string]any{"path": "README.md"})
//
// On other platforms the package builds, and every call returns ErrNoHost.
package guest

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/airlockhq/airlock/wire"
)

// ErrNoHost is returned when the program is not running under airlock's
// wasm runtime (or not built for wasip1).
var ErrNoHost = errors.New("guest: not running under airlock (build with GOOS=wasip1 GOARCH=wasm and run with airlock run)")

// Output is a tool's result: what the model would read, and its metadata.
type Output = wire.ToolOutput

// Call runs one tool with args (anything encoding/json marshals to an
// object, or a json.RawMessage) and returns its result.
func Call(tool string, args any) (*Output, error) {
	var raw []byte
	switch a := args.(type) {
	case json.RawMessage:
		raw = a
	case []byte:
		raw = a
	case nil:
		raw = []byte("{}")
	default:
		b, err := json.Marshal(args)
		if err != nil {
			return nil, fmt.Errorf("guest: encoding the arguments of %s: %w", tool, err)
		}
		raw = b
	}
	b, err := call(tool, raw)
	if err != nil {
		return nil, err
	}
	var out Output
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, fmt.Errorf("guest: decoding the result of %s: %w", tool, err)
	}
	return &out, nil
}

// Raw runs one tool with raw JSON arguments and returns the raw JSON of its
// ToolOutput.
func Raw(tool string, args []byte) ([]byte, error) { return call(tool, args) }
