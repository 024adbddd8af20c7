package audit

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/procid"
)

// TestRecoverDoesNotBlockOnAFIFO: every start of airlock runs Recover over
// the records directory before its session opens, so a file there that
// blocks a reader (a FIFO in place of a dead session's owner file, one of
// its slots or its records file) wedged every start of airlock over that
// directory for ever. Recover reads only regular files, and never waits
// for a writer.
func TestRecoverDoesNotBlockOnAFIFO(t *testing.T) {
	for _, name := range []string{"owner", "slot", "records"} {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			l, err := OpenLive(root, "ses_dead")
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Begin(InFlight{Kind: KindCall, CallID: "call_1", Tool: "shell"}); err != nil {
				t.Fatal(err)
			}
			live := filepath.Join(root, LiveDir, "ses_dead")
			dead, _ := json.Marshal(owner{Process: procid.ID("99999999-1")})
			if err := os.WriteFile(filepath.Join(live, ownerFile), dead, 0o600); err != nil {
				t.Fatal(err)
			}
			var fifo string
			switch name {
			case "owner":
				fifo = filepath.Join(live, ownerFile)
			case "slot":
				fifo = filepath.Join(live, "slot-1.json")
			case "records":
				if err := os.MkdirAll(filepath.Join(root, "ses_dead"), 0o700); err != nil {
					t.Fatal(err)
				}
				fifo = filepath.Join(root, "ses_dead", FileName)
			}
			os.Remove(fifo)
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { _, err := Recover(root, nil); done <- err }()
			// The event: Recover returns, or it holds a FIFO open for
			// reading (a non-blocking open for writing then succeeds).
			tick := time.NewTicker(time.Millisecond)
			defer tick.Stop()
			var blocked []string
			for {
				select {
				case <-done:
					if blocked != nil {
						t.Fatalf("Recover blocked reading the FIFO %q", blocked)
					}
					return
				case <-tick.C:
				}
				fifos, _ := filepath.Glob(filepath.Join(root, "*", "*", filepath.Base(fifo)))
				fifos = append(fifos, filepath.Join(root, "ses_dead", FileName))
				for _, p := range fifos {
					f, err := os.OpenFile(p, os.O_WRONLY|syscall.O_NONBLOCK, 0)
					if errors.Is(err, syscall.ENXIO) || err != nil {
						continue
					}
					if st, _ := f.Stat(); st.Mode()&os.ModeNamedPipe == 0 {
						f.Close()
						continue
					}
					f.Close() // lets the reader go
					blocked = append(blocked, p)
				}
			}
		})
	}
}

// TestOpenRefusesAFIFO: a FIFO in place of a session's records file took
// its records (opened for reading and writing, which does not wait) and,
// once its buffer was full, blocked the next write for ever with the log's
// lock held, so every call of the session hung. Open refuses it.
func TestOpenRefusesAFIFO(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, FileName), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := Open(dir)
	if err == nil {
		l.Close()
		t.Fatal("Open took a FIFO for the records file")
	}
}
