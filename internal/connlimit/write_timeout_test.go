package connlimit_test

import (
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/connlimit"
)

// TestWriteTimeout: with Options.WriteTimeout, a write to a peer that does
// not read fails with a timeout once the sockets' buffers are full, and a
// write to a peer that reads, however large, completes, since the timeout
// bounds each chunk, not the whole write.
func TestWriteTimeout(t *testing.T) {
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := connlimit.New(tcp, 4, &connlimit.Options{WriteTimeout: time.Second})
	defer ln.Close()
	accept := func() net.Conn {
		c, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	big := make([]byte, 64<<20)

	stalled, err := net.Dial("tcp", tcp.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	c := accept()
	defer c.Close()
	n, err := c.Write(big)
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a 64 MiB write to a peer that reads nothing: %d bytes, %v; want a timeout", n, err)
	}

	reader, err := net.Dial("tcp", tcp.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	read := make(chan int64, 1)
	go func() {
		n, _ := io.Copy(io.Discard, reader)
		read <- n
	}()
	c2 := accept()
	if n, err := c2.Write(big); err != nil || n != len(big) {
		t.Fatalf("a 64 MiB write to a peer that reads: %d bytes, %v", n, err)
	}
	c2.Close()
	if n := <-read; n != int64(len(big)) {
		t.Errorf("the peer read %d bytes, want %d", n, len(big))
	}
}
