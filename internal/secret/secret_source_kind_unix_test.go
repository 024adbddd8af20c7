//go:build unix

package secret

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A secret's file is read by the broker when a session opens: one that is
// a FIFO held the broker there for as long as no one wrote to it (the
// session never opened, and nothing in its context ended the wait), and a
// file of any size was read whole into the broker's memory and sent, as a
// header, with every call (red team). A source that is not a regular file,
// or that is larger than any header a server takes, is refused at once.
func TestLoadRefusesFIFOAndHugeFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := Load("file:"+fifo, os.Getenv)
		done <- err
	}()
	// The event that tells a blocked read: a writer can open the FIFO
	// without blocking only while a reader has it open.
wait:
	for {
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "not a regular file") {
				t.Errorf("Load(FIFO): %v, want a refusal of a file that is not a regular one", err)
			}
			break wait
		default:
		}
		w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err == nil {
			t.Errorf("Load(FIFO) waits for a writer to the FIFO")
			w.Close() // the reader sees end of file
			<-done
			break
		}
		if !errors.Is(err, syscall.ENXIO) {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}

	huge := filepath.Join(dir, "huge")
	if err := os.WriteFile(huge, []byte(strings.Repeat("x", 1<<20)), 0o600); err != nil {
		t.Fatal(err)
	}
	if v, err := Load("file:"+huge, os.Getenv); err == nil || v != "" {
		t.Errorf("Load(a 1 MiB file) = %d bytes, %v; want it refused", len(v), err)
	} else if !strings.Contains(err.Error(), "larger than") || strings.Contains(err.Error(), "xxxx") {
		t.Errorf("Load(a 1 MiB file): %v, want a refusal naming the limit", err)
	}
	for _, dev := range []string{"/dev/null", "/dev/zero"} {
		if _, err := os.Stat(dev); err != nil {
			continue
		}
		// Refused by kind before any byte is read (on main /dev/zero would
		// fill the broker's memory: it is tried only when /dev/null is
		// refused by kind).
		_, err := Load("file:"+dev, os.Getenv)
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("Load(%s): %v, want a refusal of a file that is not a regular one", dev, err)
			break
		}
	}
}
