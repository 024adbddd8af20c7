package tool

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// naiveLines is the reference: split into lines, match each on its own.
func naiveLines(re *regexp.Regexp, b []byte) []string {
	var out []string
	lines := bytes.Split(b, []byte{'\n'})
	if len(b) > 0 && b[len(b)-1] == '\n' {
		lines = lines[:len(lines)-1]
	}
	if len(b) == 0 {
		lines = nil
	}
	for _, l := range lines {
		if re.Match(l) {
			out = append(out, string(l))
		}
	}
	return out
}

func TestLineMatcherAgreesWithPerLineMatching(t *testing.T) {
	inputs := []string{
		"",
		"\n",
		"abc",
		"abc\n",
		"a\nb\nc\n\n",
		"func (r *Reader) Read()\nfunc (w *Writer) Write()\n  func (x *Reader) Close() error {\n",
		"left\nright",
		"aaa\n\nbbb\naXb\n",
		"x *Reader) y\n*Reader)\nfunc (r *Reader)\n",
		"\n\n\nend",
		"FUNC (R *reader)\nfunc (r *ReAdEr)\n",
		"\u212a kelvin\nſ long s\nk\n",
	}
	patterns := []string{
		`func \(\w+ \*Reader\)`, `^$`, `$`, `^`, `a`, `b$`, `^a`, `left\sright`, `\Aright`, `\Aright\z`,
		`a*`, `[^a]+`, `\*Reader\)`, `(?s)a.b`, `X|func`, `(a+)+$`, `e\n?r`, `(?i)READ`, `Reader\)$`, `(?i)func \(\w+ \*READER\)`, `(?i)K`, `(?i)ſ`, `(?i)x *READER`,
		`[\x{0}-\x{10FFFF}]{3}`, `\s+`, `[^x]{2,}$`, `(?s).{4}`, `b\s*$`, `\n`, `[\n]a`,
	}
	for _, p := range patterns {
		for _, in := range inputs {
			m, err := newLineMatcher(strings.TrimPrefix(p, "(?i)"), strings.HasPrefix(p, "(?i)"))
			if err != nil {
				t.Fatalf("%q: %v", p, err)
			}
			var got []string
			var scratch []byte
			m.each([]byte(in), &scratch, func(s, e int) bool {
				got = append(got, in[s:e])
				return true
			})
			want := naiveLines(regexp.MustCompile("(?m)"+p), []byte(in))
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("pattern %q on %q (-want +got):\n%s", p, in, d)
			}
		}
	}
}

func TestRequiredLiteral(t *testing.T) {
	tests := map[string]string{
		`func \(\w+ \*Reader\)`: " *Reader)",
		`abc`:                   "abc",
		`(?i)abc`:               "abc (folded)",
		`(?i)ASK`:               "",
		`(?i)héllo`:             "",
		`a|b`:                   "",
		`x(hello)+y`:            "hello",
		`(hello)?`:              "",
		`\w+`:                   "",
	}
	for p, want := range tests {
		m, err := newLineMatcher(p, false)
		if err != nil {
			t.Fatal(err)
		}
		got := string(m.lit)
		if m.fold {
			got += " (folded)"
		}
		if got != want {
			t.Errorf("requiredLiteral(%q) = %q, want %q", p, got, want)
		}
	}
}
