package audit

import (
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
)

// TestWriteDoesNotWaitForSync: a record is in the file (written, so it
// survives kill -9 of the broker) when Write returns, even while an fsync
// is still running; records written during an fsync share the next one;
// Close leaves every record synced.
func TestWriteDoesNotWaitForSync(t *testing.T) {
	l, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{}, 8)
	release := make(chan struct{})
	var mu sync.Mutex
	var syncedSizes []int64
	l.sync = func(f *os.File) error {
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		mu.Lock()
		syncedSizes = append(syncedSizes, fi.Size())
		mu.Unlock()
		started <- struct{}{}
		<-release
		return f.Sync()
	}
	if err := l.Write(Record{Kind: KindCall, CallID: "call_1"}); err != nil {
		t.Fatal(err)
	}
	<-started // the first record's fsync is running, and blocked
	for _, id := range []string{"call_2", "call_3"} {
		if err := l.Write(Record{Kind: KindCall, CallID: id}); err != nil {
			t.Fatal(err)
		}
	}
	text, err := os.ReadFile(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"call_1", "call_2", "call_3"} {
		if !strings.Contains(string(text), `"call_id":"`+id+`"`) {
			t.Errorf("record %s is not in the file when Write returns: %q", id, text)
		}
	}
	close(release)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(syncedSizes) != 2 {
		t.Errorf("%d fsyncs for 3 records, 2 written during the first fsync; want 2 (the later two share one)", len(syncedSizes))
	}
	if last := syncedSizes[len(syncedSizes)-1]; last != fi.Size() {
		t.Errorf("the last fsync covered %d bytes of %d: Close left records unsynced", last, fi.Size())
	}
	if err := l.Write(Record{Kind: KindCall}); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close = %v, want ErrClosed", err)
	}
}

// TestSyncFailureFailsLog: a failed fsync fails the log as a failed write
// does: every later Write and Healthy report it, and Close returns it.
func TestSyncFailureFailsLog(t *testing.T) {
	l, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	injected := errors.New("injected EIO")
	l.sync = func(*os.File) error { return injected }
	if err := l.Write(Record{Kind: KindCall, CallID: "call_1"}); err != nil {
		t.Fatal(err)
	}
	<-l.synced // the syncer stops at its first failure
	if err := l.Write(Record{Kind: KindCall, CallID: "call_2"}); !errors.Is(err, injected) || !strings.Contains(err.Error(), "syncing audit log") {
		t.Errorf("Write after a failed fsync = %v, want the sync's error", err)
	}
	if err := l.Healthy(); !errors.Is(err, injected) {
		t.Errorf("Healthy after a failed fsync = %v", err)
	}
	if err := l.Close(); !errors.Is(err, injected) {
		t.Errorf("Close after a failed fsync = %v, want the sync's error", err)
	}
}

// TestWriteDeferredSharesCloseSync: a deferred record is in the file when
// WriteDeferred returns but starts no fsync of its own; the record written
// after it (a session's close) and Close cover both with one fsync.
func TestWriteDeferredSharesCloseSync(t *testing.T) {
	l, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var syncedSizes []int64
	l.sync = func(f *os.File) error {
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		mu.Lock()
		syncedSizes = append(syncedSizes, fi.Size())
		mu.Unlock()
		return f.Sync()
	}
	if err := l.WriteDeferred(Record{Kind: KindCall, CallID: "call_1"}); err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(text), `"call_id":"call_1"`) {
		t.Errorf("the deferred record is not in the file when WriteDeferred returns: %q", text)
	}
	l.mu.Lock()
	pending, dirty := len(l.kick), l.dirty
	l.mu.Unlock()
	if pending != 0 || !dirty {
		t.Errorf("after WriteDeferred: %d signals for the syncer, dirty %v; want none, and dirty", pending, dirty)
	}
	if err := l.Write(Record{Kind: KindSession, Decision: "close"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(l.Path())
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(syncedSizes) != 1 || syncedSizes[0] != fi.Size() {
		t.Errorf("fsyncs covered %v bytes of %d; want one fsync of both records", syncedSizes, fi.Size())
	}
	if err := l.WriteDeferred(Record{Kind: KindCall}); !errors.Is(err, ErrClosed) {
		t.Errorf("WriteDeferred after Close = %v, want ErrClosed", err)
	}
}
