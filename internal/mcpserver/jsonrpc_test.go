package mcpserver_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawReply is a JSON-RPC message as the server wrote it.
type rawReply struct {
	ID     json.RawMessage `json:"id"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Method string `json:"method"`
	line   string
}

// rawSession is a client that writes raw lines to a server's stdio
// transport and reads its replies.
type rawSession struct {
	t       *testing.T
	in      io.Writer
	replies chan rawReply
	held    []rawReply // replies read while waiting for another
}

// startRaw serves f over a StdioTransport on pipes (lines capped at
// maxLine) and completes the MCP handshake.
func startRaw(t *testing.T, f *fixture, maxLine int) *rawSession {
	t.Helper()
	s := startRawBare(t, f, maxLine)
	s.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if r := s.wait(func(r rawReply) bool { return string(r.ID) == `"init"` }); r.Error != nil {
		t.Fatalf("initialize: %s", r.line)
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return s
}

// startRawBare is startRaw without the handshake.
func startRawBare(t *testing.T, f *fixture, maxLine int) *rawSession {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		served <- f.srv.Serve(context.Background(), &mcpserver.StdioTransport{Reader: inR, Writer: outW, MaxLineBytes: maxLine})
	}()
	s := &rawSession{t: t, in: inW, replies: make(chan rawReply, 64)}
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var r rawReply
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				r.Method = "UNPARSEABLE"
			}
			r.line = sc.Text()
			s.replies <- r
		}
		close(s.replies)
	}()
	t.Cleanup(func() {
		inW.Close() // end of input ends the session
		select {
		case <-served:
		case <-time.After(10 * time.Second):
			t.Error("the session did not end with its input")
		}
		outR.Close()
	})
	return s
}

func (s *rawSession) send(line string) {
	s.t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		s.t.Fatalf("writing %.80q: %v", line, err)
	}
}

// wait returns the first reply (held or new) that match accepts, holding the
// others for later waits.
func (s *rawSession) wait(match func(rawReply) bool) rawReply {
	s.t.Helper()
	for i, r := range s.held {
		if match(r) {
			s.held = append(s.held[:i], s.held[i+1:]...)
			return r
		}
	}
	timeout := time.After(30 * time.Second)
	for {
		select {
		case r, ok := <-s.replies:
			if !ok {
				s.t.Fatal("the server closed its output: the session died")
			}
			if match(r) {
				return r
			}
			s.held = append(s.held, r)
		case <-timeout:
			s.t.Fatal("no reply within 30s")
		}
	}
}

// TestStdioBadLines writes malformed and ambiguous lines to the stdio
// transport: each is answered with the JSON-RPC error it deserves (-32700
// for what is not JSON, -32600 for what is not a valid request, with the
// request's id when it can be read, else null), a call sent before them is
// still answered, no refused call runs, and a valid request after them is
// served: the session survives.
func TestStdioBadLines(t *testing.T) {
	f := newFixture(t, nil, nil)
	const maxLine = 4096
	s := startRaw(t, f, maxLine)
	// A call in flight while the bad lines arrive.
	s.send(`{"jsonrpc":"2.0","id":"slow","method":"tools/call","params":{"name":"shell","arguments":{"command":"sleep 0.5; echo slept"}}}`)

	deep := strings.Repeat("[", 1000) + strings.Repeat("]", 1000)
	deepParams := `{"jsonrpc":"2.0","id":14,"method":"ping","params":{"a":` + strings.Repeat("[", 1001) + strings.Repeat("]", 1001) + `}}`
	pwned := filepath.Join(f.root, "pwned")
	for _, tc := range []struct {
		name, line string
		code       int64
		id         string // the raw id the reply carries
		says       string // the message names what was wrong
	}{
		{"truncated", `{`, -32700, "null", "parse error"},
		{"not json", `hello`, -32700, "null", "invalid character"},
		{"trailing data", `{"jsonrpc":"2.0","method":"ping"} {}`, -32700, "null", "after top-level value"},
		{"id out of range", `{"jsonrpc":"2.0","id":1e400,"method":"ping"}`, -32600, "null", `"id" must be`},
		{"fractional id", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, -32600, "null", `"id" must be`},
		{"unsafe integer id", `{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`, -32600, "null", `"id" must be`},
		{"null id", `{"jsonrpc":"2.0","id":null,"method":"ping"}`, -32600, "null", `"id" must be`},
		{"1000-deep array", deep, -32600, "null", "batches are not supported"},
		{"batch", `[{"jsonrpc":"2.0","id":6,"method":"ping"}]`, -32600, "null", "batches are not supported"},
		{"string", `"hello"`, -32600, "null", "JSON object"},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":5,"method":"ping"}`, -32600, "5", `"jsonrpc" must be "2.0"`},
		{"no jsonrpc", `{"id":5,"method":"ping"}`, -32600, "5", `"jsonrpc" must be "2.0"`},
		{"duplicate name", `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"read_file","name":"shell","arguments":{"path":"x","command":"touch pwned"}}}`, -32600, "7", `duplicate key "params.name"`},
		{"duplicate arguments", `{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"shell","arguments":{"command":"true"},"arguments":{"command":"touch pwned"}}}`, -32600, "8", `duplicate key "params.arguments"`},
		{"duplicate method", `{"jsonrpc":"2.0","id":9,"method":"ping","method":"tools/call","params":{"name":"shell","arguments":{"command":"touch pwned"}}}`, -32600, "9", `duplicate key "method"`},
		{"duplicate key in the arguments", `{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"shell","arguments":{"command":"true","command":"touch pwned"}}}`, -32600, `"a"`, `duplicate key "params.arguments.command"`},
		{"duplicate id", `{"jsonrpc":"2.0","id":9,"id":10,"method":"ping"}`, -32600, "null", `duplicate key "id"`},
		{"method not a string", `{"jsonrpc":"2.0","id":11,"method":5}`, -32600, "11", `"method" must be a string`},
		{"params not an object", `{"jsonrpc":"2.0","id":12,"method":"ping","params":"x"}`, -32600, "12", `"params" must be an object`},
		{"neither request nor response", `{"jsonrpc":"2.0","id":13}`, -32600, "13", "exactly one of"},
		{"too deep for the SDK", deepParams, -32600, "14", "depth"},
		{"too long", `{"jsonrpc":"2.0","id":15,"method":"ping","params":{"pad":"` + strings.Repeat("a", maxLine) + `"}}`, -32600, "null", "longer than 4096 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s.t = t
			s.send(tc.line)
			r := s.wait(func(r rawReply) bool { return r.Error != nil })
			if r.Error.Code != tc.code || string(r.ID) != tc.id || !strings.Contains(r.Error.Message, tc.says) {
				t.Errorf("reply %s, want code %d, id %s and a message saying %q", r.line, tc.code, tc.id, tc.says)
			}
		})
	}
	s.t = t

	slow := s.wait(func(r rawReply) bool { return string(r.ID) == `"slow"` })
	if !strings.Contains(slow.line, "slept") || slow.Error != nil {
		t.Errorf("the call sent before the bad lines: %s, want its result", slow.line)
	}
	s.send(`{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"glob","arguments":{"pattern":"*"}}}`)
	if r := s.wait(func(r rawReply) bool { return string(r.ID) == "20" }); r.Error != nil || !strings.Contains(r.line, "[airlock: glob") {
		t.Errorf("a call after the bad lines: %s, want its result", r.line)
	}
	if _, err := os.Stat(pwned); err == nil {
		t.Error("a refused message ran its command")
	}
	for _, r := range s.held {
		if r.Error != nil {
			t.Errorf("an unexpected error reply: %s", r.line)
		}
	}
}

// discover is a SEP-2575 server/discover request at the newest version.
const discover = `{"jsonrpc":"2.0","id":"d","method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}}}`

// TestProtocolVersions pins the versions each transport offers in
// server/discover: stdio all the SDK supports, 2026-07-28 included; HTTP all
// but 2026-07-28, which the SDK serves only without sessions, and airlock's
// HTTP sessions carry the broker session (its queue, audit file and
// background work). docs/mcp.md says so; a change here must change it.
func TestProtocolVersions(t *testing.T) {
	all := mcp.SupportedProtocolVersions()
	versions := func(t *testing.T, body string) []string {
		t.Helper()
		_, data, _ := strings.Cut(body, "data: ") // an SSE event over HTTP
		if data == "" {
			data = body
		}
		var r struct {
			Result struct {
				SupportedVersions []string `json:"supportedVersions"`
			} `json:"result"`
		}
		if err := json.Unmarshal([]byte(strings.TrimSpace(data)), &r); err != nil || len(r.Result.SupportedVersions) == 0 {
			t.Fatalf("server/discover: %q (%v)", body, err)
		}
		return r.Result.SupportedVersions
	}
	t.Run("stdio", func(t *testing.T) {
		s := startRawBare(t, newFixture(t, nil, nil), 0)
		s.send(discover)
		r := s.wait(func(r rawReply) bool { return string(r.ID) == `"d"` })
		if got := versions(t, r.line); !slices.Equal(got, all) {
			t.Errorf("stdio offers %v, want %v", got, all)
		}
	})
	t.Run("http", func(t *testing.T) {
		base := serveHTTP(t, newFixture(t, nil, nil), testToken)
		status, _, body, _ := rpcPost(t, base, "", discover, map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover"})
		want := slices.DeleteFunc(slices.Clone(all), func(v string) bool { return v == "2026-07-28" })
		if got := versions(t, body); status != http.StatusOK || !slices.Equal(got, want) {
			t.Errorf("http offers %v (status %d), want %v", got, status, want)
		}
	})
}
