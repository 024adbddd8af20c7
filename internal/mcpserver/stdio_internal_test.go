package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestStdioPendingBytesBounded (issue 11.8): while the requests read but
// not yet answered hold more than MaxPendingBytes, the transport reads no
// further line, so a client's large calls cannot all be in memory at once;
// an answer lets the next one in.
func TestStdioPendingBytesBounded(t *testing.T) {
	pr, pw := io.Pipe()
	tr := &StdioTransport{Reader: pr, Writer: io.Discard, MaxPendingBytes: 3 << 10}
	conn, err := tr.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	big := strings.Repeat("x", 2<<10)
	go func() {
		for id := 1; id <= 3; id++ {
			fmt.Fprintf(pw, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"f","content":"%s"}}}`+"\n", id, big)
		}
	}()
	ctx := context.Background()
	first, err := conn.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The second request (2 KiB more) would pass the 3 KiB bound: it is
	// not read until the first is answered.
	second := make(chan jsonrpc.Message, 1)
	go func() {
		m, _ := conn.Read(ctx)
		second <- m
	}()
	select {
	case m := <-second:
		t.Fatalf("a second large request was read before the first was answered: %v", m)
	case <-time.After(100 * time.Millisecond):
	}
	req := first.(*jsonrpc.Request)
	if err := conn.Write(ctx, &jsonrpc.Response{ID: req.ID, Result: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	m := <-second
	if r, ok := m.(*jsonrpc.Request); !ok || r.ID.Raw() != int64(2) {
		t.Fatalf("after the answer, read %#v, want request 2", m)
	}
}

// TestEncodeMessageAsTheSDKDoes checks that encodeMessage writes what
// jsonrpc.EncodeMessage writes, byte for byte, for a result with a number
// or a string id, and leaves every other message to it.
func TestEncodeMessageAsTheSDKDoes(t *testing.T) {
	str, err := jsonrpc.MakeID("a\"b\\c<&>")
	if err != nil {
		t.Fatal(err)
	}
	num, err := jsonrpc.MakeID(float64(7))
	if err != nil {
		t.Fatal(err)
	}
	req, err := jsonrpc.DecodeMessage([]byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_file"}}`))
	if err != nil {
		t.Fatal(err)
	}
	result := json.RawMessage(`{"content":[{"type":"text","text":"line\nnext \u003c"}],"isError":false}`)
	for name, msg := range map[string]jsonrpc.Message{
		"result, number id": &jsonrpc.Response{ID: num, Result: result},
		"result, string id": &jsonrpc.Response{ID: str, Result: result},
		"error":             &jsonrpc.Response{ID: num, Error: &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "bad"}},
		"not an object":     &jsonrpc.Response{ID: num, Result: json.RawMessage(`[1, 2]`)},
		"request":           req,
	} {
		got, err := encodeMessage(msg)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		want, err := jsonrpc.EncodeMessage(msg)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s: encodeMessage = %s, want %s", name, got, want)
		}
	}
}
