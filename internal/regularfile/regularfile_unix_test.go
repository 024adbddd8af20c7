//go:build unix

package regularfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestReadRefusesWhatIsNotARegularFile: a FIFO, a device and a directory
// are refused at once (a FIFO's read would wait for a writer), a symlink
// only without follow, and a file past its bound with ErrTooLarge.
func TestReadRefusesWhatIsNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, "/dev/zero"} {
		if _, err := Read(p, 64, true); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("Read(%s) = %v", p, err)
		}
	}
	if _, err := Read(dir, 64, true); !errors.Is(err, syscall.EISDIR) {
		t.Errorf("Read(dir) = %v, want EISDIR", err)
	}
	real := filepath.Join(dir, "real")
	if err := os.WriteFile(real, []byte("12345"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if b, err := Read(link, 64, true); err != nil || string(b) != "12345" {
		t.Errorf("Read(link, follow) = %q, %v", b, err)
	}
	if _, err := Read(link, 64, false); err == nil {
		t.Error("Read(link) without follow read through the symlink")
	}
	if _, err := Read(real, 4, false); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Read past its bound = %v, want ErrTooLarge", err)
	}
}
