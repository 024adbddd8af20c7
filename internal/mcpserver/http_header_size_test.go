package mcpserver_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/connlimit"
	"github.com/airlockhq/airlock/internal/mcpserver"
)

// TestHTTPHeadersAreSmall: a client without the token can send headers
// for up to the header timeout on each of --max-connections connections,
// and the server holds what it has read of them. MCP's headers are a few
// hundred bytes, so a request whose header block passes
// mcpserver.MaxHeaderBytes is answered 431 as soon as it has, before the
// token is checked; on main each connection could hold 1 MiB (64 connections
// that sent 1 MB of headers each: 72 MB held, 256 of them about 290 MB).
func TestHTTPHeadersAreSmall(t *testing.T) {
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := connlimit.New(tcp, mcpserver.DefaultMaxConnections, nil)
	hs := mcpserver.NewHTTPServer(http.NotFoundHandler(), nil)
	go hs.Serve(ln)
	defer hs.Close()
	addr := tcp.Addr().String()

	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	const conns = 64
	big := strings.Repeat("a", 1000) + "\r\n"
	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	for range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
		c.Write([]byte("GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"))
		// Up to 1 MB of headers, and no end to them; the writes stop
		// when the server has closed the connection.
		c.SetWriteDeadline(time.Now().Add(30 * time.Second))
		for i := 0; i < 1000; i++ {
			if _, err := fmt.Fprintf(c, "X-%d: %s", i, big); err != nil {
				break
			}
		}
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	refused := 0
	for _, c := range held {
		c.SetReadDeadline(time.Now().Add(60 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err == nil && resp.StatusCode == http.StatusRequestHeaderFieldsTooLarge {
			refused++
		}
	}
	if refused != conns {
		t.Fatalf("%d of %d requests with 1 MB of headers were refused 431 (heap in use %d -> %d MB)", refused, conns, before.HeapInuse>>20, after.HeapInuse>>20)
	}
}
