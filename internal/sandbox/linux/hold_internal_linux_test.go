package linux

import (
	"testing"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/sandbox/linux/initproto"
)

// BenchmarkHold is the host's part of claiming a warm sandbox in a plain
// directory: making and locking the placeholders of every protected and
// denied path of the default grant, then releasing them.
func BenchmarkHold(b *testing.B) {
	dir := b.TempDir()
	g, err := grant.FromFlags(dir, grant.Flags{})
	if err != nil {
		b.Fatal(err)
	}
	cfg := &initproto.Config{Mounts: []initproto.Mount{{Source: dir, Target: dir, Writable: true}},
		Masks: g.Masks(), ReadOnly: g.Protected(), ReadOnlyDirs: g.ProtectedDirs()}
	var p placeholders
	b.ResetTimer()
	for range b.N {
		held, err := p.hold(cfg)
		if err != nil {
			b.Fatal(err)
		}
		p.release(held)
	}
	b.ReportMetric(float64(len(cfg.Placeholders)), "placeholders")
}
