package mcpserver

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/sandbox/direct"
)

// TestStdioUnreadAnswersCountAgainstThePendingBudget: a client that sends
// calls and never reads stdout must not make airlock run call after call
// and hold every answer in memory. A small request counted 8 KiB until its
// answer was written, but its answer, up to the output cap (1 MiB by
// default, several times that once JSON escapes its control bytes), was not
// counted at all: with the default 32 MiB budget 4,096 calls could be read
// and run, and each answer held while it waited to be written (4 GiB and
// more). The bytes of the answers not yet written count now too, so the
// transport stops reading once they pass MaxPendingBytes.
func TestStdioUnreadAnswersCountAgainstThePendingBudget(t *testing.T) {
	root, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	const answer = 256 << 10
	if err := os.WriteFile(filepath.Join(root, "big.txt"), []byte(strings.Repeat(strings.Repeat("a", 1023)+"\n", answer>>10)), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := grant.FromFlags(root, grant.Flags{})
	if err != nil {
		t.Fatal(err)
	}
	backend, err := direct.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	records := t.TempDir()
	m := NewMetrics()
	srv, err := New(&Options{Metrics: m, Open: func(context.Context) (*broker.Session, error) {
		return broker.Open(&broker.Options{Grant: g, Backend: backend, RecordsDir: records, ToolRoot: g.BaseDir()})
	}})
	if err != nil {
		t.Fatal(err)
	}

	// stdout is a pipe the client never reads: the initialize answer fits
	// its buffer, the first read_file answer does not.
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	const budget = 1 << 20
	conn, err := (&StdioTransport{Reader: inR, Writer: outW, MaxPendingBytes: budget}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	lc := conn.(*lineConn)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, connTransport{c: conn}) }()
	lines := make(chan string, 64)
	go func() {
		for l := range lines {
			if _, err := io.WriteString(inW, l+"\n"); err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		outR.Close() // the blocked answers fail, and the session can end
		cancel()
		inW.Close()
		close(lines)
		<-served
		outW.Close()
	})

	lines <- `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`
	lines <- `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	// Calls go in waves of four, each sent once the last has been
	// answered, so the broker never refuses one as busy: every call read
	// is a call run whose answer the client then does not read.
	const wave, waves = 4, 24
	sent, ran := 0, 0
	for w := 0; w < waves; w++ {
		for range wave {
			sent++
			lines <- fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"big.txt"}}}`, sent)
		}
		deadline := time.Now().Add(time.Minute)
		stopped := false
		for {
			lc.pmu.Lock()
			full, pending := lc.held+minRequestCost > lc.budget, len(lc.pending)
			ran = lc.unwritten // every call read has its answer unwritten
			lc.pmu.Unlock()
			if pending == 0 && ran == sent {
				break // the wave ran
			}
			if pending == 0 && full {
				stopped = true // the transport reads no more, and every call it read has run
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("wave %d: %d of %d calls read, %d not answered, budget full %v", w, ran, sent, pending, full)
			}
			time.Sleep(5 * time.Millisecond)
		}
		if stopped {
			break
		}
	}
	if held := ran * answer; held > budget+wave*answer {
		t.Fatalf("airlock ran %d calls for a client that read none of their answers, and holds some %d MiB of answers (MaxPendingBytes %d MiB): the answers do not count against the budget",
			ran, held>>20, budget>>20)
	}
	t.Logf("the transport stopped reading after %d calls", ran)
}
