package grant

import "testing"

func BenchmarkCheck(b *testing.B) {
	T := fixture(b, checkFixture...)
	g, err := Parse([]byte(checkGrant), "grant.toml", T)
	if err != nil {
		b.Fatal(err)
	}
	call := Call{Tool: "write_file", Paths: []PathUse{{Path: T + "/ws/sub/new/file.txt", Write: true}}}
	for b.Loop() {
		if d := g.Check(call); !d.Allowed {
			b.Fatal(d.Reason)
		}
	}
}

func BenchmarkParse(b *testing.B) {
	T := fixture(b, checkFixture...)
	for b.Loop() {
		if _, err := Parse([]byte(checkGrant), "grant.toml", T); err != nil {
			b.Fatal(err)
		}
	}
}
