package cli

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"
)

// blockedWriter is a client's end of airlock mcp's stdout that the client
// never reads: every Write blocks until the test ends.
type blockedWriter struct {
	wrote   chan struct{} // closed at the first Write
	release chan struct{}
}

func (w *blockedWriter) Write(p []byte) (int, error) {
	select {
	case <-w.wrote:
	default:
		close(w.wrote)
	}
	<-w.release
	return 0, io.ErrClosedPipe
}

// TestMCPStopsWhenItsClientDoesNotRead: airlock mcp whose client stopped
// reading its stdout still ends on SIGTERM (here, its context's end, which
// the signal handling shares). On main it never did: the session cannot
// close while an answer waits to be written, and mcp waited for it.
func TestMCPStopsWhenItsClientDoesNotRead(t *testing.T) {
	inR, inW := io.Pipe()
	out := &blockedWriter{wrote: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(func() { close(out.release); inW.Close() })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	var stderr bytes.Buffer
	go func() {
		done <- Main(ctx, []string{"mcp", "--unsandboxed", "--root", t.TempDir(), "--records", t.TempDir()}, inR, out, &stderr)
	}()
	io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`+"\n")
	<-out.wrote // the answer is being written, and never will be
	cancel()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("airlock mcp has not ended a minute after SIGTERM: it waits for its client to read an answer")
	}
}
