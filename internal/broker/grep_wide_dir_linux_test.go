package broker_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/sandboxtest"
)

// TestGrepWideDirectoryBounded: grep lists each directory to search it in
// name order, and a sandbox decides how many entries a directory of its
// tree holds. One of 200,000 empty files with 250-byte names, searched
// under a 128 MiB memory limit, must still be searched, not run grep out
// of memory listing it.
func TestGrepWideDirectoryBounded(t *testing.T) {
	f := newFixture(t, grant.Limits{Memory: 128 << 20, Processes: 64})
	dir := filepath.Join(f.ws, "wide")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	fd, err := syscall.Open(dir, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(fd)
	pad := strings.Repeat("n", 240)
	for i := range 200000 {
		nfd, err := syscall.Openat(fd, fmt.Sprintf("%s%09d", pad, i), syscall.O_CREAT|syscall.O_WRONLY|syscall.O_CLOEXEC, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		syscall.Close(nfd)
	}
	if err := os.WriteFile(filepath.Join(dir, "z"), []byte("needle\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := f.open(t, sandboxtest.Native(t), nil)
	res := call(t, s, "grep", `{"pattern":"needle"}`)
	if res.Class != broker.ClassOK || res.Output.IsError || !strings.Contains(res.Output.Content, filepath.Join(dir, "z")) {
		t.Fatalf("grep: class %s, output %.500q", res.Class, res.Output.Content)
	}
}
