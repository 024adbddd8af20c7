package tool

import (
	"math/rand/v2"
	"path"
	"strings"
	"testing"
)

// TestGlobStateSetsAgree: the matcher (constant-time state sets, runs of
// "**" taken as one) matches exactly what a plain recursive reading of the
// same pattern does, over random patterns and paths.
func TestGlobStateSetsAgree(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	segs := []string{"**", "**", "a", "b", "*", "?", "a*", "[ab]"}
	names := []string{"a", "b", "ab", "ba", "c"}
	for range 20000 {
		var p []string
		for range 1 + r.IntN(6) {
			p = append(p, segs[r.IntN(len(segs))])
		}
		var rel []string
		for range 1 + r.IntN(6) {
			rel = append(rel, names[r.IntN(len(names))])
		}
		pattern, path := strings.Join(p, "/"), strings.Join(rel, "/")
		g, err := compileGlob("pattern", pattern)
		if err != nil {
			t.Fatalf("%q: %v", pattern, err)
		}
		if got, want := g.match(path), refMatch(p, rel); got != want {
			t.Fatalf("pattern %q on %q: matched %v, want %v", pattern, path, got, want)
		}
	}
}

// refMatch matches path segments against pattern segments recursively.
func refMatch(p, rel []string) bool {
	if len(p) == 0 {
		return len(rel) == 0
	}
	if p[0] == "**" {
		for i := 0; i <= len(rel); i++ {
			if refMatch(p[1:], rel[i:]) {
				return true
			}
		}
		return false
	}
	if len(rel) == 0 {
		return false
	}
	ok, _ := path.Match(p[0], rel[0])
	return ok && refMatch(p[1:], rel[1:])
}

// TestGlobStarStarRunsAreOne: a run of "**" segments compiles to one, so a
// pattern padded with them costs what the short one does.
func TestGlobStarStarRunsAreOne(t *testing.T) {
	g, err := compileGlob("pattern", strings.Repeat("**/", 1000)+"x.go")
	if err != nil {
		t.Fatal(err)
	}
	if got := g.alts[0]; len(got) != 2 {
		t.Errorf("compiled to %d segments, want 2 (**, x.go)", len(got))
	}
	if !g.match("x.go") || !g.match("a/b/x.go") || g.match("a/y.go") {
		t.Error("the collapsed pattern does not match as ** does")
	}
}

// BenchmarkGlobHostilePattern matches patterns at the length limit that
// keep hundreds of states alive against a path deep enough to use them:
// "**/a/" repeated (a state per "**" reached) and "**/" repeated.
func BenchmarkGlobHostilePattern(b *testing.B) {
	for _, p := range []struct{ name, pattern string }{
		{"alternating", strings.Repeat("**/a/", maxPatternBytes/5-1) + "b"},
		{"stars", strings.Repeat("**/", maxPatternBytes/3-1) + "b"},
	} {
		b.Run(p.name, func(b *testing.B) {
			g, err := compileGlob("pattern", p.pattern)
			if err != nil {
				b.Fatal(err)
			}
			rel := strings.Repeat("a/", 1000) + "b"
			b.ResetTimer()
			for range b.N {
				g.match(rel)
			}
		})
	}
}
