package tool

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/airlockhq/airlock/wire"
)

// tailReference is read_file's tail as the model is told it works, kept
// simple: the last n lines; while more than one and over cp bytes, the
// oldest is cut; one line over cp keeps its last cp bytes from a
// character's start. It returns the content and the bytes cut from the
// last n lines.
func tailReference(data string, n, cp int) (string, int) {
	lines := strings.SplitAfter(data, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	lines = lines[max(len(lines)-n, 0):]
	all := strings.Join(lines, "")
	size := len(all)
	for len(lines) > 1 && size > cp {
		size -= len(lines[0])
		lines = lines[1:]
	}
	content := strings.Join(lines, "")
	if len(content) > cp {
		cut := len(content) - cp
		for cut < len(content) && !utf8.RuneStart(content[cut]) {
			cut++
		}
		content = content[cut:]
	}
	return content, len(all) - len(content)
}

// TestReadTailWindow holds read_file's tail, which keeps only a window of
// the file's end, to the reference on files of every shape around the
// output cap and the read buffer: short and long lines, with and without
// a last newline, multi-byte characters cut at the cap.
func TestReadTailWindow(t *testing.T) {
	w := newWorkspace(t)
	rng := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"a", "é", "漢", "\n", "\n", "xxxxxxxxxxxxxxxx", strings.Repeat("y", 300)}
	for i := range 600 {
		var b strings.Builder
		for range rng.IntN(40) + 1 {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		if i%7 == 0 {
			b.WriteString(strings.Repeat("z\n", 70000)) // past the read buffer
			b.WriteString("end")
		}
		data := b.String()
		n := rng.IntN(12) + 1
		if i%5 == 0 {
			n = 1 << 30
		}
		cp := rng.IntN(80) + 1
		name := fmt.Sprintf("f%d.txt", i)
		if err := os.WriteFile(filepath.Join(w.root, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		env := w.env()
		env.Limits = wire.ToolLimits{OutputBytes: int64(cp)}
		out := call(t, env, "read_file", fmt.Sprintf(`{"path":%q,"tail":%d}`, name, n))
		want, cut := tailReference(data, n, cp)
		if cut > 0 {
			want = fmt.Sprintf("[truncated: the %d bytes before this were cut to fit the output cap; read them with offset/limit]\n", cut) + want
		}
		if out.IsError || out.Content != want {
			t.Fatalf("file %d (%d bytes), tail %d, cap %d:\n got %.300q\nwant %.300q", i, len(data), n, cp, out.Content, want)
		}
	}
}
