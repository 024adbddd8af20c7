package podman

import (
	"testing"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/containtest"
)

// TestLiveSuite runs the containment suite against the Podman backend: a
// broker session whose every call runs in a fresh container of the local
// test image (busybox in a scratch root).
func TestLiveSuite(t *testing.T) {
	b := newLive(t)
	containtest.Run(t, func(t *testing.T, g *grant.Grant) *broker.Session {
		s, err := broker.Open(&broker.Options{Grant: g, Backend: b, RecordsDir: t.TempDir(), Pool: -1})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}, &containtest.Options{Binaries: []string{live.exe}})
}
