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
