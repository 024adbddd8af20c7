package writetmp

import (
	"strings"
	"testing"
)

func TestTag(t *testing.T) {
	if got := Tag("call_0123456789abcdef"); got != "0123456789abcdef" {
		t.Errorf("Tag of a broker's call id = %q", got)
	}
	for _, id := range []string{"", "call_0123", "call_0123456789ABCDEF", "x_0123456789abcdef", "call_0123456789abcdef0"} {
		a, b := Tag(id), Tag(id)
		if !validTag(a) || a == b {
			t.Errorf("Tag(%q) = %q, %q; want a random tag each time", id, a, b)
		}
	}
}

func TestNameMatches(t *testing.T) {
	const tag = "0123456789abcdef"
	long := strings.Repeat("n", 200)
	for _, base := range []string{"f.txt", ".hidden", "a-b.airlock-x.tmp", long} {
		n := Name(base, tag)
		if !Matches(n, tag) || Matches(n, "fedcba9876543210") || len(n) > 64+40 {
			t.Errorf("Name(%.20q) = %q: matches its tag %v, another %v", base, n, Matches(n, tag), Matches(n, "fedcba9876543210"))
		}
	}
	for _, n := range []string{
		".f.txt.airlock-" + tag + ".tmp",           // the older pattern
		"f.txt.airlock-" + tag + "-00000000.tmp",   // no dot
		"..airlock-" + tag + "-00000000.tmp",       // no name
		".f.txt.airlock-" + tag + "-0000000g.tmp",  // not hex
		".f.txt.airlock-" + tag + "-00000000.tmpx", // suffix
		".f.txt.airlock-" + tag + "-00000000",      // no suffix
	} {
		if Matches(n, tag) {
			t.Errorf("Matches(%q) = true", n)
		}
	}
	if Matches(Name("f", "short"), "short") {
		t.Error("a tag that is not 16 hex digits matched")
	}
}
