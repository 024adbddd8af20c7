package mcpserver

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"sync"

	"github.com/airlockhq/airlock/wire"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// maxSafeID is the largest integer id every client (JavaScript included) and
// the SDK (which holds ids as float64 on the way in) carry without rounding.
const maxSafeID = 1<<53 - 1

// integerID is the form of an integer id airlock accepts: no fraction, no
// exponent, no leading zeros.
var integerID = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`) })

// rpcError is a JSON-RPC error reply that airlock writes itself, before the
// SDK sees the message: the message could not be parsed or is not a valid
// JSON-RPC 2.0 request, notification or response.
type rpcError struct {
	// ID is the raw id of the offending message, or JSON null when it could
	// not be read.
	ID      json.RawMessage
	Code    int64
	Message string
}

// MarshalJSON renders e as a JSON-RPC response. The id is always present,
// null when unknown, as JSON-RPC requires (the SDK's encoder would omit it).
func (e *rpcError) MarshalJSON() ([]byte, error) {
	id := e.ID
	if len(id) == 0 {
		id = json.RawMessage("null")
	}
	return json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: e.Code, Message: e.Message}})
}

func parseError(format string, args ...any) *rpcError {
	return &rpcError{Code: jsonrpc.CodeParseError, Message: "parse error: " + fmt.Sprintf(format, args...)}
}

func invalidRequest(id json.RawMessage, format string, args ...any) *rpcError {
	return &rpcError{ID: id, Code: jsonrpc.CodeInvalidRequest, Message: "invalid request: " + fmt.Sprintf(format, args...)}
}

// checkMessage validates one JSON-RPC message strictly and decodes it for the
// SDK, or returns the error reply to send instead. It refuses, naming what is
// wrong: data that is not JSON (-32700); and (-32600) a batch, a value that
// is not an object, a key twice in one object anywhere in the message (the
// SDK would silently take the last "name", running another tool than the one
// checked), a "jsonrpc" other than "2.0", an id that is not a string or a
// safe integer, a method that is not a string, params that are not an
// object or array, and an object that is neither a request nor a response.
func checkMessage(data []byte) (jsonrpc.Message, *rpcError) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil, parseError("empty message")
	}
	// One decoding both finds a syntax error (it checks the whole input
	// first) and reads the envelope, with keys matched exactly as the SDK does.
	var env map[string]json.RawMessage
	if err := json.Unmarshal(data, &env); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return nil, parseError("%v (at byte %d)", err, se.Offset)
		case errors.As(err, &te) && data[0] == '[':
			return nil, invalidRequest(nil, "JSON-RPC batches are not supported; send one message at a time")
		case errors.As(err, &te):
			return nil, invalidRequest(nil, "a message must be a JSON object")
		}
		return nil, parseError("%v", err)
	}
	if env == nil { // the JSON null
		return nil, invalidRequest(nil, "a message must be a JSON object")
	}
	id, idErr := checkID(env)
	if err := wire.CheckDuplicateKeys(data); err != nil {
		var fe *wire.FieldError
		if errors.As(err, &fe) && fe.Key == "id" {
			id = nil
		}
		return nil, invalidRequest(id, "%v", err)
	}
	if idErr != "" {
		return nil, invalidRequest(nil, "%s", idErr)
	}
	if d := depth(data); d > maxDepth {
		return nil, invalidRequest(id, "the message nests %d levels deep, past the maximum depth of %d", d, maxDepth)
	}
	if v, ok := env["jsonrpc"]; !ok || string(v) != `"2.0"` {
		return nil, invalidRequest(id, `"jsonrpc" must be "2.0", got %s`, show(v, ok))
	}
	_, hasResult := env["result"]
	_, hasError := env["error"]
	if m, ok := env["method"]; ok {
		var method string
		if err := json.Unmarshal(m, &method); err != nil || m[0] != '"' {
			return nil, invalidRequest(id, `"method" must be a string, got %s`, m)
		}
		if hasResult || hasError {
			return nil, invalidRequest(id, `a request has no "result" or "error"`)
		}
		p, ok := env["params"]
		if ok && p[0] != '{' && p[0] != '[' && string(p) != "null" {
			return nil, invalidRequest(id, `"params" must be an object, got %s`, p)
		}
		// The request is whole now: built here, not decoded a second time
		// by the SDK (whose decoder allocates 64 KiB a message).
		rid, err := requestID(id)
		if err != nil {
			return nil, invalidRequest(nil, "%v", err)
		}
		return &jsonrpc.Request{ID: rid, Method: method, Params: p}, nil
	} else {
		if id == nil {
			return nil, invalidRequest(nil, `a message needs a "method" (a request or notification) or an "id" with a "result" or an "error" (a response)`)
		}
		if hasResult == hasError {
			return nil, invalidRequest(id, `a response has exactly one of "result" and "error"`)
		}
	}
	msg, err := jsonrpc.DecodeMessage(data)
	if err != nil {
		return nil, invalidRequest(id, "%v", err)
	}
	return msg, nil
}

// maxDepth is the deepest nesting of arrays and objects a message may
// have: the SDK's own bound, which its decoding of the params would
// otherwise be the first to find.
const maxDepth = 1000

// depth returns how deep the arrays and objects of data, valid JSON, nest.
func depth(data []byte) int {
	d, deepest := 0, 0
	inString, escaped := false, false
	for _, b := range data {
		switch {
		case inString && escaped:
			escaped = false
		case inString && b == '\\':
			escaped = true
		case inString && b == '"':
			inString = false
		case inString:
		case b == '"':
			inString = true
		case b == '{' || b == '[':
			d++
			deepest = max(deepest, d)
		case b == '}' || b == ']':
			d--
		}
	}
	return deepest
}

// requestID is the SDK's ID of raw, an id checkID accepted (or nil, a
// notification's), as the SDK's own decoding makes it: a string, or an
// integer as a float64.
func requestID(raw json.RawMessage) (jsonrpc.ID, error) {
	var v any
	if raw != nil {
		if err := json.Unmarshal(raw, &v); err != nil {
			return jsonrpc.ID{}, fmt.Errorf("decoding the id %.64s: %w", raw, err)
		}
	}
	return jsonrpc.MakeID(v)
}

// checkID returns the raw id of a message, nil when it has none (a
// notification), or why the id is refused. MCP ids are strings or integers,
// never null.
func checkID(env map[string]json.RawMessage) (json.RawMessage, string) {
	raw, ok := env["id"]
	if !ok {
		return nil, ""
	}
	switch {
	case raw[0] == '"':
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return nil, fmt.Sprintf(`"id" %s is not a valid string`, raw)
		}
		return raw, ""
	case integerID().Match(raw):
		if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil && n >= -maxSafeID && n <= maxSafeID {
			return raw, ""
		}
	}
	return nil, fmt.Sprintf(`"id" must be a string or an integer between -%d and %d, got %.64s`, int64(maxSafeID), int64(maxSafeID), raw)
}

// show renders a raw value for an error message, or "nothing" when absent.
func show(v json.RawMessage, ok bool) string {
	if !ok {
		return "nothing"
	}
	return fmt.Sprintf("%.64s", v)
}

// encodeReply renders a reply as one line.
func encodeReply(e *rpcError) []byte {
	b, err := json.Marshal(e)
	if err != nil {
		// Only strings and numbers go in; this cannot fail.
		return []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error"}}`)
	}
	return b
}
