package tool

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// benchPattern is a method-receiver search typical of an agent's grep.
const benchPattern = `func \(\w+ \*Reader\)`

// BenchmarkGrepGOROOT compares the grep tool with GNU grep -rnE over the same
// tree in one run, so the ratio is meaningful on any machine.
func BenchmarkGrepGOROOT(b *testing.B) {
	goroot, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		b.Skipf("go env GOROOT: %v", err)
	}
	src := filepath.Join(strings.TrimSpace(string(goroot)), "src")
	if _, err := os.Stat(src); err != nil {
		b.Skipf("GOROOT/src not available: %v", err)
	}
	b.Run("airlock", func(b *testing.B) {
		d, _ := Lookup("grep")
		args, err := d.Parse(json.RawMessage(`{"pattern":` + jsonString(benchPattern) + `,"path":` + jsonString(src) + `,"output_mode":"content"}`))
		if err != nil {
			b.Fatal(err)
		}
		env := Env{Root: "/", Cwd: src}
		for b.Loop() {
			out := d.Run(context.Background(), env, args)
			if out.IsError || out.Meta.Count == 0 {
				b.Fatalf("grep found nothing: %+v", out)
			}
		}
	})
	b.Run("gnu-grep", func(b *testing.B) {
		if _, err := exec.LookPath("grep"); err != nil {
			b.Skip("grep not installed")
		}
		for b.Loop() {
			out, err := exec.Command("grep", "-rnE", benchPattern, src).Output()
			if err != nil || len(out) == 0 {
				b.Fatalf("grep: %v", err)
			}
		}
	})
}

// BenchmarkReadFile reads a 4 MiB text file, capped at the default 1 MiB.
func BenchmarkReadFile(b *testing.B) {
	dir := b.TempDir()
	line := strings.Repeat("x", 99) + "\n"
	if err := os.WriteFile(filepath.Join(dir, "big.txt"), []byte(strings.Repeat(line, 40<<10)), 0o644); err != nil {
		b.Fatal(err)
	}
	d, _ := Lookup("read_file")
	args, err := d.Parse(json.RawMessage(`{"path":"big.txt"}`))
	if err != nil {
		b.Fatal(err)
	}
	env := Env{Root: dir, Cwd: dir}
	for b.Loop() {
		if out := d.Run(context.Background(), env, args); out.IsError || !out.Truncated {
			b.Fatalf("unexpected result: %.200s", out.Content)
		}
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// BenchmarkGrepLargeProgram times patterns just inside maxRegexpInsts over
// 1.3 MB (issue 11.11): one that can match '\n' (searched line by line, where
// the whole-buffer search was quadratic in the repeat), and a near miss at
// every byte of one long line, the worst case the bound allows.
func BenchmarkGrepLargeProgram(b *testing.B) {
	dir := b.TempDir()
	lines := strings.Repeat("the quick brown fox jumps over the lazy dog 0123456789 abcdefghij\n", 20000)
	if err := os.WriteFile(filepath.Join(dir, "lines.txt"), []byte(lines), 0o644); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "one-line.txt"), []byte(strings.Repeat("abcdefghij", 130000)), 0o644); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct{ name, pattern, file string }{
		{"any_rune_997_lines", `[\x{0}-\x{10FFFF}]{997}`, "lines.txt"},
		{"near_miss_996_one_line", `[a-z]{996}[XY]`, "one-line.txt"},
	} {
		b.Run(c.name, func(b *testing.B) {
			d, _ := Lookup("grep")
			args, err := d.Parse(json.RawMessage(`{"pattern":` + jsonString(c.pattern) + `,"path":` + jsonString(c.file) + `,"output_mode":"count"}`))
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(1300000)
			for b.Loop() {
				if out := d.Run(context.Background(), Env{Root: dir, Cwd: dir}, args); out.IsError {
					b.Fatal(out.Content)
				}
			}
		})
	}
}
