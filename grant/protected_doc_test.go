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
	rows := docTableRows(t, "## The table")
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

// TestCredentialTableDocumented keeps docs/protected-paths.md's table of
// hidden credentials the same as credentialTable, row for row.
func TestCredentialTableDocumented(t *testing.T) {
	rows := docTableRows(t, "## A home directory's credentials")
	if len(rows) != len(credentialTable) {
		t.Errorf("docs list %d credential stores, the table has %d", len(rows), len(credentialTable))
	}
	for i, e := range credentialTable {
		kind := "file"
		if e.Dir {
			kind = "directory"
		}
		want := fmt.Sprintf("| `%s` | %s | %s |", e.Name, kind, e.Holds)
		if i >= len(rows) || rows[i] != want {
			t.Errorf("row %d: docs have\n\t%q\nwant\n\t%q", i, rowAt(rows, i), want)
		}
	}
}

// docTableRows returns the table rows ("| `name` ...") of the section of
// docs/protected-paths.md under heading, up to the next heading.
func docTableRows(t *testing.T, heading string) []string {
	t.Helper()
	b, err := os.ReadFile("../docs/protected-paths.md")
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	in := false
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "## ") {
			in = line == heading
			continue
		}
		if in && strings.HasPrefix(line, "| `") {
			rows = append(rows, line)
		}
	}
	if len(rows) == 0 {
		t.Fatalf("docs/protected-paths.md has no table under %q", heading)
	}
	return rows
}

func rowAt(rows []string, i int) string {
	if i < len(rows) {
		return rows[i]
	}
	return ""
}
