package runner

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/airlockhq/airlock/wire"
)

// FuzzFitContent: whatever the content, a content cut by fitContent
// encodes in at most its budget of JSON, keeps a prefix of what it was
// (cut at a character), and says so. `go test -run '^$' -fuzz
// FuzzFitContent ./internal/runner` runs it longer.
func FuzzFitContent(f *testing.F) {
	f.Add("plain text\n", 200)
	f.Add(strings.Repeat("<&>", 100), 160)
	f.Add(strings.Repeat("\x01\x1b\u2028\"\\", 80), 300)
	f.Add("é漢字🙂\t\r\n", 150)
	f.Fuzz(func(t *testing.T, content string, budget int) {
		content = wire.ValidUTF8(content) // as run has it
		budget = 150 + abs(budget)%4096
		out := wire.ToolOutput{Content: content}
		fitContent(&out, budget)
		data, err := encodeOutput(wire.ToolOutput{Content: out.Content})
		if err != nil {
			t.Fatal(err)
		}
		empty, _ := encodeOutput(wire.ToolOutput{})
		if cost := len(data) - len(empty); cost > budget {
			t.Fatalf("the content costs %d bytes of JSON, the budget was %d", cost, budget)
		}
		if !out.Truncated {
			if out.Content != content {
				t.Fatalf("changed without a cut: %q -> %q", content, out.Content)
			}
			return
		}
		kept, _, ok := strings.Cut(out.Content, "\n[truncated: ")
		if !ok || !strings.HasPrefix(content, kept) || !utf8.ValidString(kept) {
			t.Fatalf("the cut content %q is no prefix of %q, or has no note", out.Content, content)
		}
		if out.Meta.OmittedBytes != int64(len(content)-len(kept)) {
			t.Fatalf("omitted %d, cut %d", out.Meta.OmittedBytes, len(content)-len(kept))
		}
	})
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
