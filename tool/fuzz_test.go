package tool

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fuzzParse checks a tool's argument parser on arbitrary input: it never
// panics, a refusal names a field or the JSON fault, and accepted arguments
// survive a round trip through JSON unchanged (what the broker checked is
// what the runner runs).
func fuzzParse(f *testing.F, name string) {
	d, ok := Lookup(name)
	if !ok {
		f.Fatalf("no tool %q", name)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		a, err := d.Parse(json.RawMessage(raw))
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty refusal")
			}
			return
		}
		acc := a.Access()
		if len(acc.Paths) != 1 || acc.Paths[0].Path == "" {
			t.Fatalf("Access() = %+v, want exactly one non-empty path", acc)
		}
		b, err := json.Marshal(a)
		if err != nil {
			t.Fatalf("marshal accepted args: %v", err)
		}
		again, err := d.Parse(b)
		if err != nil {
			t.Fatalf("re-parsing %s: %v", b, err)
		}
		if diff := cmp.Diff(a, again); diff != "" {
			t.Fatalf("round trip changed the args (-first +second):\n%s", diff)
		}
	})
}

func FuzzParseReadFile(f *testing.F)  { fuzzParse(f, "read_file") }
func FuzzParseWriteFile(f *testing.F) { fuzzParse(f, "write_file") }
func FuzzParseEditFile(f *testing.F)  { fuzzParse(f, "edit_file") }
func FuzzParseGlob(f *testing.F)      { fuzzParse(f, "glob") }
func FuzzParseGrep(f *testing.F)      { fuzzParse(f, "grep") }
func FuzzParseShell(f *testing.F)     { fuzzParse(f, "shell") }
