package linux

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestReadAllAt checks readAllAt against a plain read of generated files
// shorter and longer than its first buffer, read twice through one
// descriptor (as the counters kept open are). /proc/kallsyms is many pages
// of records: there a short read is a seq_file buffer's edge, not the end
// (mountinfo, which CI's other tests change as they mount, first showed
// it: 16,016 of 16,572 bytes).
func TestReadAllAt(t *testing.T) {
	for _, p := range []string{"/proc/self/stat", "/proc/self/limits", "/proc/kallsyms"} {
		fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			got, err := readAllAt(fd, p)
			if err != nil {
				t.Fatal(err)
			}
			want, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			// The files describe this process, which may change between
			// the reads (its times, say): compare what cannot change.
			if strings.HasSuffix(p, "stat") {
				got, want = bytes.Fields(got)[0:2][1], bytes.Fields(want)[0:2][1]
			}
			if len(got) < 2 || !bytes.Equal(got, want) {
				t.Errorf("readAllAt(%s) = %d bytes, want the %d of a plain read", p, len(got), len(want))
			}
		}
		unix.Close(fd)
	}
}
