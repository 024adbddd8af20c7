package containtest_test

import (
	"testing"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/containtest"
	"github.com/airlockhq/airlock/internal/sandboxtest"
)

func TestMain(m *testing.M) { sandboxtest.Main(m) }

// TestNative runs the containment suite against the native Linux sandbox.
func TestNative(t *testing.T) {
	backend := sandboxtest.Native(t)
	containtest.Run(t, func(t *testing.T, g *grant.Grant) *broker.Session {
		s, err := broker.Open(&broker.Options{Grant: g, Backend: backend, RecordsDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}, nil)
}
