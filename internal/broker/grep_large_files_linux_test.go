package broker_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/sandboxtest"
)

// TestGrepManyLargeFilesBounded: grep skips files over its size cap and
// names the first few; the tree decides how many there are. A sandbox
// makes 60,000 sparse files of 1 GiB (no disk) below a path 4,000 bytes
// long, and a grep of the tree under a 128 MiB memory limit must still
// answer, not run out of memory keeping every skipped file's path.
func TestGrepManyLargeFilesBounded(t *testing.T) {
	f := newFixture(t, grant.Limits{Memory: 128 << 20, Processes: 64})
	deep := f.ws
	for i := 0; len(deep) < 3800; i++ {
		deep = filepath.Join(deep, strings.Repeat(strconv.Itoa(i%10), 200))
	}
	if err := os.MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	const n = 60000
	for i := range n {
		fh, err := os.Create(filepath.Join(deep, "f"+strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		if err := fh.Truncate(1 << 30); err != nil {
			t.Fatal(err)
		}
		fh.Close()
	}
	s := f.open(t, sandboxtest.Native(t), nil)
	res := call(t, s, "grep", `{"pattern":"needle"}`)
	if res.Class != broker.ClassOK || res.Output.IsError {
		t.Fatalf("grep: class %s, output %.500q", res.Class, res.Output.Content)
	}
	if !strings.Contains(res.Output.Content, "and "+strconv.Itoa(n-5)+" more") {
		t.Errorf("grep does not count the skipped files: %.500q", res.Output.Content)
	}
}

// TestGrepReadsBoundedAtOnce: grep's workers, one per CPU, each read a
// whole file of up to 32 MiB (and, for ignore_case, a folded copy of it)
// at once, so what a grep held grew with the host's CPUs, not with
// anything the grant says. A tree of files just under the cap, sparse ones
// that are binary (read whole before the check) and text ones searched
// with ignore_case, under a 128 MiB memory limit (on a host of two
// CPUs; more CPUs held more), must still be searched.
func TestGrepReadsBoundedAtOnce(t *testing.T) {
	f := newFixture(t, grant.Limits{Memory: 128 << 20, Processes: 64})
	const size = 32<<20 - 1
	for i := range 8 {
		fh, err := os.Create(filepath.Join(f.ws, "sparse"+strconv.Itoa(i)))
		if err != nil {
			t.Fatal(err)
		}
		if err := fh.Truncate(size); err != nil {
			t.Fatal(err)
		}
		fh.Close()
	}
	line := strings.Repeat("hay ", 15) + "\n"
	text := strings.Repeat(line, (size-20)/len(line)) + "NEEDLE\n"
	for i := range 4 {
		if err := os.WriteFile(filepath.Join(f.ws, "text"+strconv.Itoa(i)), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := f.open(t, sandboxtest.Native(t), nil)
	for _, args := range []string{`{"pattern":"needle","glob":"sparse*"}`, `{"pattern":"needle","ignore_case":true,"glob":"text*","output_mode":"count"}`} {
		res := call(t, s, "grep", args)
		if res.Class != broker.ClassOK || res.Output.IsError {
			t.Fatalf("grep %s: class %s, output %.500q", args, res.Class, res.Output.Content)
		}
		t.Logf("grep %s: %.300q", args, res.Output.Content)
	}
}
