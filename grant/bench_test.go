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

// BenchmarkParseHostile times the inputs of issue 11.9, which took the
// loader 4 s to 68 s before nesting was bounded and problems capped: each
// must now cost about what a decode of its size does.
func BenchmarkParseHostile(b *testing.B) {
	inputs := map[string]string{"4000 bad keys": manyBadKeys(4000)}
	for name, doc := range deepGrants {
		inputs[name] = doc
	}
	for name, doc := range inputs {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			for b.Loop() {
				if _, err := Parse([]byte(doc), "hostile.toml", "/"); err == nil {
					b.Fatal("parsed")
				}
			}
		})
	}
}

// BenchmarkProtectedScan times the protected-path scan of a read-write
// tree of 20,000 entries (200 directories of 99 files, some with nested
// protected names), the most the scan reads.
func BenchmarkProtectedScan(b *testing.B) {
	r := scanTree(b, 200, 99)
	for b.Loop() {
		if _, complete := protectedPaths(r, nil, []string{r}, nil); !complete {
			b.Fatal("scan capped")
		}
	}
}

// BenchmarkProtectedPathsPlain lists the protected paths of an empty
// read-write directory, as every exec in a plain directory does: the
// top-level names, none of which exists.
func BenchmarkProtectedPathsPlain(b *testing.B) {
	r := scanTree(b, 0, 0)
	for b.Loop() {
		if _, complete := protectedPaths(r, nil, []string{r}, nil); !complete {
			b.Fatal("scan capped")
		}
	}
}
