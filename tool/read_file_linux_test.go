package tool

import (
	"os"
	"strings"
	"testing"
)

// TestReadFileSkipsPastTheReportedSize reads a line far into a /proc file:
// /proc reports a size of 0, so read_file takes the first buffered bytes
// for the size, and skipping 20,000 lines goes far past it. Before the
// output's room was clamped this panicked (a negative bytes.Buffer.Grow),
// as a regular file that grows while its first lines are skipped did.
func TestReadFileSkipsPastTheReportedSize(t *testing.T) {
	b, err := os.ReadFile("/proc/kallsyms")
	if err != nil || strings.Count(string(b), "\n") < 30000 || len(b) < 4*maxReadBuf {
		t.Skipf("/proc/kallsyms is not a long file here (%d bytes, %v)", len(b), err)
	}
	out := runReadFile(t.Context(), Env{Root: "/proc", Cwd: "/proc"}, ReadFileArgs{Path: "kallsyms", Offset: 20000, Limit: 2})
	if out.IsError {
		t.Fatalf("read_file failed: %s", out.Content)
	}
	if n := strings.Count(out.Content, "\n"); n != 2 {
		t.Errorf("got %d lines, want 2: %q", n, out.Content)
	}
}
