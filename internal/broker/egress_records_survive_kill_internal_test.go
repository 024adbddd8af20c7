package broker

import (
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/egress"
)

// TestEgressHostIsRecordedBeforeTheBrokerCanDie: past a proxy's first
// egressSingles decisions, decisions are counted in memory and written a
// minute later or when the proxy stops. A broker killed (kill -9, a crash,
// the OOM killer) before then took every counted decision with it: a
// connection the sandbox was allowed to open to a host it had not reached
// before left no record at all, though the call itself is recovered as
// interrupted at the next start. Each host, port and verdict a proxy
// decides is on disk before the decision returns; only the count of
// repeats waits.
func TestEgressHostIsRecordedBeforeTheBrokerCanDie(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ses_egress")
	lg, err := audit.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := &Session{id: "ses_egress", log: lg, logger: slog.New(slog.DiscardHandler)}
	a := s.egressRecorder(&call{id: "call_1", tool: "shell"})
	now := time.Now().UTC()
	for i := range egressSingles {
		a.decide(egress.Decision{Time: now.Add(time.Duration(i)), Host: "noise.test", Port: 443, Reason: "not granted"})
	}
	a.decide(egress.Decision{Time: now.Add(time.Hour), Host: "exfil.test", Port: 443, Allowed: true, Rule: "network.hosts[0]", Reason: "ok"})
	// The broker dies here: nothing flushes the counted records. (Stop the
	// timer that would, a minute on, so the test reads what a kill leaves.)
	a.mu.Lock()
	if a.timer != nil {
		a.timer.Stop()
	}
	a.mu.Unlock()

	recs, _, err := audit.ReadAll(filepath.Dir(dir), "ses_egress")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range recs {
		if r.Kind == audit.KindEgress && r.Host == "exfil.test" && r.Decision == "allowed" {
			found = true
		}
	}
	if !found {
		t.Errorf("%d egress records on disk, none of the allowed connection to exfil.test:443", len(recs))
	}
	lg.Close()
}
