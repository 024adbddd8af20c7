//go:build unix

package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckOutputCannotBeForgedByTheGrant: airlock check shows a person what
// a grant decides, and a grant comes from anywhere (a cloned repository's
// grant file, naming its own directories). A directory whose name holds a
// newline and escape sequences, granted by such a file, was printed as it
// is in check's decision ("granted: DIR", "ALLOWED by ... (DIR)"): its
// escapes drove the terminal and its newline began a line of the grant's
// choosing, so a refused call could show "decision: ALLOWED" after the
// REFUSED line was erased. Every line of check's output must start with one
// of its labels and hold no control character.
func TestCheckOutputCannotBeForgedByTheGrant(t *testing.T) {
	dir := t.TempDir()
	evil := "d\n\x1b[1A\x1b[2K\rdecision: ALLOWED by paths\x1b]52;c;aWQK\x07\u202e"
	if err := os.Mkdir(filepath.Join(dir, evil), 0o755); err != nil {
		t.Skipf("this file system takes no such name: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, evil, "f"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	toml := "[paths]\nread_only = [\"d\\n\\u001b[1A\\u001b[2K\\rdecision: ALLOWED by paths\\u001b]52;c;aWQK\\u0007\\u202e\"]\n"
	grantFile := filepath.Join(dir, "grant.toml")
	if err := os.WriteFile(grantFile, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("AIRLOCK_STATE_DIR", t.TempDir())
	t.Chdir(dir)
	labels := []string{"grant:", "call:", "touches:", "reaches:", "runs:", "decision:", "limits:", "host:", "risk:"}
	for _, tc := range []struct{ name, args string }{
		{"refused", `{"path":"/etc/hostname"}`},
		{"allowed", `{"path":` + jsonString(filepath.Join(dir, evil, "f")) + `}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			env := &Env{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr, Getenv: os.Getenv}
			lookup("check").run(context.Background(), env, []string{grantFile, "read_file", tc.args})
			out := stdout.String() + stderr.String()
			if !strings.Contains(out, "decision:") {
				t.Fatalf("no decision in %q", out)
			}
			for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
				ok := false
				for _, l := range labels {
					ok = ok || strings.HasPrefix(line, l)
				}
				if !ok {
					t.Errorf("a line check did not write: %q\nall: %q", line, out)
				}
				for _, r := range line {
					if r < 0x20 && r != '\t' || r == 0x7f || r >= 0x80 && r < 0xa0 || r == '\u202e' {
						t.Errorf("control character %U reaches the terminal in %q", r, line)
						break
					}
				}
			}
			if n := strings.Count("\n"+out, "\ndecision:"); n != 1 {
				t.Errorf("%d decision lines in %q", n, out)
			}
		})
	}
}

// jsonString quotes s as a JSON string (its control characters escaped).
func jsonString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20:
			b.WriteString(`\u00`)
			b.WriteByte("0123456789abcdef"[r>>4])
			b.WriteByte("0123456789abcdef"[r&15])
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
