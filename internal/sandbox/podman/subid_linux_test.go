package podman

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/internal/sandbox"
)

// A host user whose subordinate ids overlap the containers' could map them
// and reach the containers' processes and files: refused, naming the line.
func TestCheckSubIDs(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	debian := write("subuid", "alice:100000:65536\nbob:165536:65536\n# a comment\n\n")
	if err := checkSubIDs([]string{debian, filepath.Join(dir, "missing")}); err != nil {
		t.Errorf("useradd's ranges: %v", err)
	}
	for _, body := range []string{
		"mallory:1879048192:1\n",
		"mallory:1879000000:100000\n",
		"alice:100000:65536\nmallory:1879113727:5\n",
		"mallory:1:4294967294\n",
	} {
		p := write("subgid", body)
		err := checkSubIDs([]string{debian, p})
		var mf *sandbox.MissingFeatureError
		if !errors.As(err, &mf) || !strings.Contains(err.Error(), "mallory") || !strings.Contains(err.Error(), p+":") {
			t.Errorf("%q: %v, want a refusal naming mallory's line", body, err)
		}
	}
	if err := checkSubIDs([]string{write("edge", "x:1879113728:10\ny:1879048182:10\n")}); err != nil {
		t.Errorf("ranges just outside: %v", err)
	}
}
