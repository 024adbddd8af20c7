package sandbox

import (
	"os"
	"path/filepath"
	"testing"
)

// TestAbandonableKeepsWritersThatNeverWait: a regular file and /dev/null
// are written in the caller's goroutine (the writer comes back as it is);
// a pipe, whose reader may stop, is wrapped.
func TestAbandonableKeepsWritersThatNeverWait(t *testing.T) {
	stop := make(chan struct{})
	f, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for _, tc := range []struct {
		name string
		f    *os.File
		kept bool
	}{{"regular file", f, true}, {"/dev/null", null, true}, {"pipe", w, false}} {
		got := Abandonable(tc.f, stop)
		if kept := got == any(tc.f); kept != tc.kept {
			t.Errorf("%s: returned as it is %v, want %v", tc.name, kept, tc.kept)
		}
	}
}
