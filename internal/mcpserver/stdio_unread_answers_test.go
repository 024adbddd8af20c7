package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/broker"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stuckWriter is a client's stdin that nobody reads: every Write blocks
// until the test ends.
type stuckWriter struct{ release chan struct{} }

func (w stuckWriter) Write(p []byte) (int, error) {
	<-w.release
	return 0, errors.New("closed")
}

// connTransport hands the SDK a connection made beforehand, so the test
// can look at the lineConn it serves.
type connTransport struct{ c mcp.Connection }

func (t connTransport) Connect(context.Context) (mcp.Connection, error) { return t.c, nil }

// serveUnread serves a stdio transport with a pending budget of budget
// bytes whose answers cannot be written until the test ends; it returns
// the connection and the client's end to write requests to.
func serveUnread(t *testing.T, budget int) (*lineConn, *io.PipeWriter) {
	t.Helper()
	srv, err := New(&Options{Open: func(context.Context) (*broker.Session, error) {
		return nil, errors.New("no session in this test")
	}})
	if err != nil {
		t.Fatal(err)
	}
	out := stuckWriter{release: make(chan struct{})}
	pr, pw := io.Pipe()
	tr := &StdioTransport{Reader: pr, Writer: out, MaxPendingBytes: int64(budget)}
	conn, err := tr.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, connTransport{c: conn}) }()
	t.Cleanup(func() {
		cancel()
		close(out.release)
		pw.Close()
		<-served
	})
	return conn.(*lineConn), pw
}

// TestStdioRequestsStayBoundedWhileAnswersAreNotRead: a client that writes
// requests and never reads its answers (a buggy client, or a hostile one)
// must not make airlock read, and hold a goroutine and the SDK's state
// for, every request it sends: the requests read and not yet answered stay
// within MaxPendingBytes until their answers are written, and a small
// request counts as what it costs, not as its few bytes. On main the
// bytes of a request were freed before its answer was written, so 200,000
// pings were all read and each held a blocked goroutine (about 1.1 GB).
func TestStdioRequestsStayBoundedWhileAnswersAreNotRead(t *testing.T) {
	const budget = 256 << 10
	lc, pw := serveUnread(t, budget)

	const n = 200_000
	goroutines := runtime.NumGoroutine()
	fed := make(chan int, 1)
	go func() {
		for id := 1; id <= n; id++ {
			if _, err := fmt.Fprintf(pw, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`+"\n", id); err != nil {
				fed <- id - 1
				return
			}
		}
		fed <- n
	}()
	// Either the reader stops, the budget full of requests whose answers
	// cannot be written, or it reads every request.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		select {
		case got := <-fed:
			var ms runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&ms)
			t.Logf("heap %d MB stacks %d MB sys %d MB", ms.HeapInuse>>20, ms.StackInuse>>20, ms.Sys>>20)
			t.Fatalf("airlock read all %d requests while none of their answers could be written (MaxPendingBytes %d); goroutines %d -> %d",
				got, budget, goroutines, runtime.NumGoroutine())
		default:
		}
		lc.pmu.Lock()
		full := lc.held+minRequestCost > lc.budget
		held, pending := lc.held, len(lc.pending)
		lc.pmu.Unlock()
		if full {
			if max := budget / minRequestCost; pending > max {
				t.Fatalf("%d requests are held (%d bytes), want at most %d", pending, held, max)
			}
			if d := runtime.NumGoroutine() - goroutines; d > 4*budget/minRequestCost+100 {
				t.Fatalf("%d more goroutines with %d requests pending", d, pending)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("neither were all requests read nor was the budget filled: held %d of %d, %d pending", held, budget, pending)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestStdioNotificationsStayBoundedBehindAnUnwrittenAnswer: the SDK handles
// initialize (and a call it refuses before running it) in order with the
// notifications, so while that answer cannot be written every message read
// after it waits in the SDK's queue, which has no bound. Notifications read
// while a request's answer is unwritten count against MaxPendingBytes too:
// a client that sends an initialize, never reads, and sends notifications
// without end stops being read. On main 200,000 notifications were all read
// and queued (53 MB, and growing with every one).
func TestStdioNotificationsStayBoundedBehindAnUnwrittenAnswer(t *testing.T) {
	const budget = 256 << 10
	lc, pw := serveUnread(t, budget)

	const n = 200_000
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	fed := make(chan int, 1)
	go func() {
		fmt.Fprintln(pw, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`)
		for id := 1; id <= n; id++ {
			if _, err := fmt.Fprintf(pw, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d}}`+"\n", id); err != nil {
				fed <- id - 1
				return
			}
		}
		fed <- n
	}()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		select {
		case got := <-fed:
			var ms runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&ms)
			t.Fatalf("airlock read all %d notifications behind an answer it could not write (MaxPendingBytes %d); heap in use %d -> %d MB",
				got, budget, before.HeapInuse>>20, ms.HeapInuse>>20)
		default:
		}
		lc.pmu.Lock()
		full := lc.held+minNotificationCost > lc.budget
		held := lc.held
		lc.pmu.Unlock()
		if full {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("neither were all notifications read nor was the budget filled: held %d of %d", held, budget)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
