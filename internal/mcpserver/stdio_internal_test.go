package mcpserver

import (
	"context"
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
