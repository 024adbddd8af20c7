package grant

import (
	"errors"
	"strings"
	"testing"
)

// FuzzParse feeds the loader arbitrary grant files. A grant either parses or
// fails with *Error values, every line of which names the file; a parsed
// grant is self-consistent.
//
// Time budget: any input up to MaxFileSize must parse in milliseconds, not
// seconds. The TOML library is quadratic in nesting depth, so checkNesting
// refuses depth past maxNesting before decoding, problems stop being
// collected at maxErrors, and key lines come from the one decode (issue
// 11.9). The fuzzer reports no slow input by itself: with minimisation kept
// short (it shows as 0 execs/sec too), a rate that falls to 0 is the sign of
// one, and BenchmarkParseHostile times the known worst cases. Run it for a
// while after changing load.go, nesting.go or position.go (1,000 to 7,000
// execs/sec on one core here):
//
//	go test -run '^$' -fuzz FuzzParse -fuzztime 2m -fuzzminimizetime 2s -parallel 1 ./grant
func FuzzParse(f *testing.F) {
	base := fixture(f, loadFixture...)
	f.Fuzz(func(t *testing.T, data []byte) {
		g, err := Parse(data, "fuzz.toml", base)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error is not an *Error: %v", err)
			}
			for _, line := range strings.Split(err.Error(), "\n") {
				if !strings.HasPrefix(line, "fuzz.toml") {
					t.Fatalf("error line does not name the file: %q", line)
				}
			}
			return
		}
		if g2, err := Parse(data, "fuzz.toml", base); err != nil || g2.String() != g.String() {
			t.Fatalf("parsing again gives a different grant: %v\n%s\n%v", err, g, g2)
		}
		for _, m := range g.Mounts() {
			if m.Source == "/" || within(m.Source, "/proc") || within(m.Source, "/sys") || within(m.Source, "/dev") {
				t.Fatalf("unsafe mount %q", m.Source)
			}
		}
		for _, d := range g.Masks() {
			if _, ok := g.rootOf(d); !ok {
				t.Fatalf("mask %q outside every grant", d)
			}
		}
		for _, tool := range g.EnabledTools() {
			l := g.LimitsFor(tool)
			if l.Time <= 0 || l.Memory <= 0 || l.Processes <= 0 || l.Output <= 0 || l.FileSize <= 0 || l.Tmp <= 0 {
				t.Fatalf("tool %s has an unset limit: %+v", tool, l)
			}
		}
		if d := g.Check(Call{Tool: "read_file", Paths: []PathUse{{Path: "/etc/shadow"}}}); d.Allowed && !strings.Contains(d.Rule, "/etc") {
			t.Fatalf("/etc/shadow allowed by %s", d.Rule)
		}
		if d := g.Check(Call{Tool: "write_file", Paths: []PathUse{{Path: "ws/.git/hooks/x", Write: true}}}); d.Allowed && len(d.Risks) == 0 {
			t.Fatalf("hook write allowed by %s without a risk", d.Rule)
		}
	})
}
