package writetmp

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// TestSweepWideDirectory: in a directory of more names than one batch
// holds, Sweep removes every temporary file of the call's tag, wherever
// it falls among the batches, and nothing else: not another call's, not
// a directory of the same name, not the user's files.
func TestSweepWideDirectory(t *testing.T) {
	dir := t.TempDir()
	tag, other := Tag("call_1"), Tag("call_2")
	touch := func(name string) {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var mine []string
	for i := range 3*sweepBatch + 7 {
		touch("user-file-" + strconv.Itoa(i))
		if i%500 == 0 {
			n := Name("f"+strconv.Itoa(i), tag)
			touch(n)
			mine = append(mine, n)
			touch(Name("f"+strconv.Itoa(i), other))
		}
	}
	if err := os.Mkdir(filepath.Join(dir, Name("d", tag)), 0o700); err != nil {
		t.Fatal(err)
	}
	n, err := Sweep(dir, tag)
	if err != nil || n != len(mine) {
		t.Fatalf("Sweep = %d, %v; want %d removed", n, err, len(mine))
	}
	for _, m := range mine {
		if _, err := os.Lstat(filepath.Join(dir, m)); !os.IsNotExist(err) {
			t.Errorf("%s is still there (%v)", m, err)
		}
	}
	left, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := 3*sweepBatch + 7 + len(mine) + 1; len(left) != want {
		t.Errorf("%d entries left, want %d (the user's, the other call's and the directory)", len(left), want)
	}
}
