package broker_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/sandboxtest"
)

// TestReadTailManyLinesBounded: read_file's tail keeps at most the output
// cap of a file's end, whatever the file. A file of 24 million empty
// lines (24 MiB, well within a sandbox's file-size limit) read with a tail
// longer than it under a 128 MiB memory limit must still answer, not run
// out of memory counting the lines it cut.
func TestReadTailManyLinesBounded(t *testing.T) {
	f := newFixture(t, grant.Limits{Memory: 128 << 20, Processes: 64})
	if err := os.WriteFile(filepath.Join(f.ws, "lines.txt"), bytes.Repeat([]byte{'\n'}, 24<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	s := f.open(t, sandboxtest.Native(t), nil)
	res := call(t, s, "read_file", `{"path":"lines.txt","tail":1000000000}`)
	if res.Class != broker.ClassOK || res.Output.IsError {
		t.Fatalf("read_file: class %s, output %.300q", res.Class, res.Output.Content)
	}
	if !res.Output.Truncated || !strings.Contains(res.Output.Content, "[truncated: the 24117248 bytes before this") {
		t.Errorf("read_file's tail does not say it was cut: %.300q", res.Output.Content)
	}
}
