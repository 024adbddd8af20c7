package inside

import "testing"

// TestGitPattern: a placeholder's git exclude pattern is anchored at the
// tree's root and matches its name literally.
func TestGitPattern(t *testing.T) {
	for rel, want := range map[string]string{
		".bashrc":             "/.bashrc",
		".git/commondir":      "/.git/commondir",
		"secrets/prod[1].key": `/secrets/prod\[1\].key`,
		"#notes":              `/\#notes`,
		"!x":                  `/\!x`,
		"a*b?c":               `/a\*b\?c`,
		"back\\slash":         `/back\\slash`,
		"trailing ":           `/trailing\ `,
	} {
		if got := gitPattern(rel); got != want {
			t.Errorf("gitPattern(%q) = %q, want %q", rel, got, want)
		}
	}
}
