package broker_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/sandboxtest"
)

// TestEditDiffKeepsTheOutputLimit: the diff edit_file answers with is
// output the model reads, so it is held to the call's output limit as
// read_file's and shell's are. It was cut at 32 KiB whatever the limit:
// under a 4 KiB limit, an edit of every line of a file answered with
// 32 KiB of diff, six times that once JSON-escaped when the file's text
// held control characters.
func TestEditDiffKeepsTheOutputLimit(t *testing.T) {
	const limit = 4 << 10
	f := newFixture(t, grant.Limits{Output: limit})
	s := f.open(t, sandboxtest.Native(t), nil)
	for name, line := range map[string]string{
		"text":    "the old line of text\n",
		"control": strings.Repeat("\x01", 20) + " old\n",
	} {
		t.Run(name, func(t *testing.T) {
			file := name + ".txt"
			if err := os.WriteFile(filepath.Join(f.ws, file), []byte(strings.Repeat(line, 3000)), 0o644); err != nil {
				t.Fatal(err)
			}
			res := call(t, s, "edit_file", fmt.Sprintf(`{"path":%q,"old_string":"old","new_string":"new","replace_all":true}`, file))
			out := res.Output
			if res.Class != broker.ClassOK || out.IsError || !strings.Contains(out.Content, "made 3000 replacements") {
				t.Fatalf("edit_file: class %s, output %q", res.Class, out.Content[:min(len(out.Content), 300)])
			}
			_, body, _ := strings.Cut(out.Content, "\n") // the label's header is airlock's
			enc, _ := json.Marshal(body)
			if len(enc) > limit {
				t.Errorf("the answer costs %d bytes of JSON (%d as text) under an output limit of %d", len(enc), len(body), limit)
			}
			if !strings.Contains(body, "[diff cut: ") {
				t.Errorf("the diff does not say it was cut: %q", body[max(0, len(body)-200):])
			}
		})
	}
}
