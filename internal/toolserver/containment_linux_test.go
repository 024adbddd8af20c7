package toolserver_test

import (
	"testing"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/containtest"
)

// TestContainment runs the containment suite against remote hands: a
// broker session over a WebSocket to a tool-server (in this process) that
// runs each call in the native sandbox, both capped by the suite's grant.
func TestContainment(t *testing.T) {
	containtest.Run(t, func(t *testing.T, g *grant.Grant) *broker.Session {
		_, url := serveGrant(t, g)
		s, err := broker.Open(&broker.Options{Grant: g, Backend: remote(t, url, nil), RecordsDir: t.TempDir(), Pool: -1})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}, nil)
}
