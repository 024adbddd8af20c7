package mcpserver

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// lockedBuffer is a Writer the test can read while the transport writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestStdioDuplicateIDKeepsPendingBound: a request whose id is that of a
// request still in flight must not free the first one's bytes from the
// pending bound. The SDK answers such a duplicate at once with an error
// under the same id; counted by id, that answer released the bytes of the
// large request still running, and a client pairing each large call with
// a small duplicate had the transport read on past MaxPendingBytes without
// bound. The duplicate is refused by the transport itself, never counted
// and never handed to the SDK.
func TestStdioDuplicateIDKeepsPendingBound(t *testing.T) {
	pr, pw := io.Pipe()
	out := &lockedBuffer{}
	tr := &StdioTransport{Reader: pr, Writer: out, MaxPendingBytes: 3 << 10}
	conn, err := tr.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	defer pw.Close()
	big := strings.Repeat("x", 2<<10)
	call := func(id int, content string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"f","content":"%s"}}}`+"\n", id, content)
	}
	go func() {
		fmt.Fprint(pw, call(1, big))
		fmt.Fprint(pw, call(1, "small")) // the same id, while 1 runs
		fmt.Fprint(pw, call(2, big))
	}()

	// Play the SDK: hand requests on, and answer a duplicate of an id in
	// flight at once with an error under that id, as the SDK does.
	ctx := context.Background()
	got := make(chan *jsonrpc.Request, 4)
	go func() {
		inFlight := map[any]bool{}
		for {
			m, err := conn.Read(ctx)
			if err != nil {
				return
			}
			req, ok := m.(*jsonrpc.Request)
			if !ok {
				continue
			}
			if inFlight[req.ID.Raw()] {
				_ = conn.Write(ctx, &jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "request ID already in use"}})
				continue
			}
			inFlight[req.ID.Raw()] = true
			got <- req
		}
	}()
	first := <-got
	if first.ID.Raw() != int64(1) {
		t.Fatalf("first request %v, want 1", first.ID.Raw())
	}
	// The duplicate is answered with an error under its id.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if s := out.String(); strings.Contains(s, `"id":1`) && strings.Contains(s, "error") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the duplicate got no error answer: %q", out.String())
		}
	}
	// Request 1 (2 KiB) is still unanswered: request 2 (2 KiB more) passes
	// the 3 KiB bound and must wait.
	select {
	case r := <-got:
		t.Fatalf("request %v was read while request 1 still held its bytes: the duplicate's answer freed them", r.ID.Raw())
	case <-time.After(200 * time.Millisecond):
	}
	if err := conn.Write(ctx, &jsonrpc.Response{ID: first.ID, Result: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-got:
		if r.ID.Raw() != int64(2) {
			t.Fatalf("after request 1's answer, read %v, want request 2", r.ID.Raw())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("request 2 was never read after request 1 was answered")
	}
}
