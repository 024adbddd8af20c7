package hostrule

import "testing"

// BenchmarkNormalise is the per-connection cost of reading a host: the
// proxy normalises every requested name once, the grant once more.
func BenchmarkNormalise(b *testing.B) {
	for _, h := range []string{"registry.npmjs.org", "Shop.Bücher.Example.", "93.184.216.34"} {
		b.Run(h, func(b *testing.B) {
			for b.Loop() {
				if _, _, err := Normalise(h); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
