package grant

import (
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// TestScanNestedBeyondPathMax: a nested protected name deeper than
// PATH_MAX, which a shell can make one relative mkdir at a time, is found,
// and the scan is complete; once ENAMETOOLONG skipped it and called the
// scan complete.
func TestScanNestedBeyondPathMax(t *testing.T) {
	r, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	comp := strings.Repeat("d", 250)
	fd, err := syscall.Open(r, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range append(slices.Repeat([]string{comp}, 17), "repo", ".vscode") {
		if err := syscall.Mkdirat(fd, c, 0o755); err != nil {
			t.Fatal(err)
		}
		next, err := syscall.Openat(fd, c, syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_CLOEXEC, 0)
		syscall.Close(fd)
		if err != nil {
			t.Fatal(err)
		}
		fd = next
	}
	syscall.Close(fd)
	want := r + strings.Repeat("/"+comp, 17) + "/repo/.vscode .vscode dir=true"
	got := runScan(scanNested, r, false, []string{r})
	if !got.Complete || len(got.Found) != 1 || got.Found[0] != want {
		t.Errorf("scan of a tree deeper than PATH_MAX: complete %v, found %d names (%.80q...); want complete, the nested .vscode", got.Complete, len(got.Found), got.Found)
	}
}
