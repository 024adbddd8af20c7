package grant

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestProtectedTableDocumented keeps docs/protected-paths.md's table the
// same as protectedTable, row for row.
func TestProtectedTableDocumented(t *testing.T) {
	b, err := os.ReadFile("../docs/protected-paths.md")
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "| `") {
			rows = append(rows, line)
		}
	}
	if len(rows) != len(protectedTable) {
		t.Errorf("docs list %d protected names, the table has %d", len(rows), len(protectedTable))
	}
	for i, e := range protectedTable {
		kind := "file"
		if e.Dir {
			kind = "directory"
		}
		want := fmt.Sprintf("| `%s` | %s | %s | %s |", e.Name, kind, e.Where, e.Reader)
		if i >= len(rows) || rows[i] != want {
			t.Errorf("row %d: docs have\n\t%q\nwant\n\t%q", i, rowAt(rows, i), want)
		}
	}
}

func rowAt(rows []string, i int) string {
	if i < len(rows) {
		return rows[i]
	}
	return ""
}
