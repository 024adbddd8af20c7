package broker

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/egress"
)

// The egress records of one proxy (a call's, or background work's for its
// lifetime) are bounded, so that a sandbox opening connections as fast as
// it can (each one refused, say) cannot fill the records' disk: the first
// egressSingles decisions get a record each; after them, the first of its
// kind (same decision, rule, host and port) gets one too, written at once,
// and every later one alike is counted into a record that stands for them
// all (audit.Record.Count, from Time to Until), at most egressGroups kinds,
// and those records are written when the proxy stops and egressFlushEvery
// after the first of them was counted (background work runs for hours).
// Nothing is dropped: every decision is in a record, alone or counted; a
// broker that dies loses only the counts not yet written.
const (
	egressSingles    = 256
	egressGroups     = 64
	egressFlushEvery = time.Minute
)

// egressKey is what makes decisions alike.
type egressKey struct {
	decision, rule, host string
	port                 int
}

// egressAudit writes the egress records of one proxy.
type egressAudit struct {
	s *Session
	c *call

	mu      sync.Mutex
	singles int
	groups  map[egressKey]*audit.Record
	order   []egressKey
	timer   *time.Timer // flushes the groups egressFlushEvery after the first
}

// egressRecorder returns the recorder of a proxy of call c.
func (s *Session) egressRecorder(c *call) *egressAudit {
	return &egressAudit{s: s, c: c}
}

// record is the audit record of one decision.
func (a *egressAudit) record(d egress.Decision) audit.Record {
	rec := audit.Record{
		Time:     d.Time,
		Kind:     audit.KindEgress,
		Session:  a.s.id,
		CallID:   a.c.id,
		Tool:     a.c.tool,
		Host:     d.Host,
		Port:     d.Port,
		Decision: "allowed",
		Rule:     d.Rule,
		Reason:   d.Reason,
	}
	if d.Addr.IsValid() {
		rec.Addr = d.Addr.String()
	}
	if !d.Allowed {
		rec.Decision = "refused"
		switch {
		case rec.Rule != "":
		case d.Host == "":
			rec.Rule = "egress" // refused before a host was named: a limit or a malformed request
		default:
			rec.Rule = "network.hosts"
		}
	}
	if strings.Contains(d.Rule, "network.private") {
		rec.Risks = []string{d.Rule + ": a non-public address may be dialled"}
	}
	if d.Proto != "" {
		rec.Detail = "proto " + d.Proto
	}
	return rec
}

// decide records one decision of the proxy. Past the singles, the first
// decision of its kind is still written at once, as a record of its own,
// and only the decisions alike that follow are counted: a broker killed
// before the counted records are written (kill -9, a crash) loses the count
// of repeats, never that a host was reached or refused.
func (a *egressAudit) decide(d egress.Decision) {
	rec := a.record(d)
	a.mu.Lock()
	if a.singles < egressSingles {
		a.singles++
		a.mu.Unlock()
		a.write(rec)
		return
	}
	k := egressKey{rec.Decision, rec.Rule, rec.Host, rec.Port}
	g, ok := a.groups[k]
	other := false
	if !ok && len(a.groups) >= egressGroups {
		// Past the groups too: one more stands for every other host.
		k, other = egressKey{decision: rec.Decision, rule: rec.Rule}, true
		g, ok = a.groups[k]
	}
	if ok {
		if g.Count == 0 {
			g.Time = rec.Time
		}
		g.Count++
		g.Until = rec.Time
		a.mu.Unlock()
		return
	}
	group := rec // counts the decisions alike after this one
	if other {
		group.Host, group.Port, group.Addr = "", 0, ""
		group.Reason = fmt.Sprintf("decisions on hosts past the first %d of this record's kind, each with its own reason; the first: %s", egressGroups, rec.Reason)
	}
	if a.groups == nil {
		a.groups = map[egressKey]*audit.Record{}
		a.timer = time.AfterFunc(egressFlushEvery, a.flush)
	}
	a.groups[k] = &group
	a.order = append(a.order, k)
	a.mu.Unlock()
	a.write(rec)
}

// flush writes the counted records so far and starts them over.
func (a *egressAudit) flush() {
	a.mu.Lock()
	groups, order := a.groups, a.order
	a.groups, a.order = nil, nil
	if a.timer != nil {
		a.timer.Stop()
		a.timer = nil
	}
	a.mu.Unlock()
	for _, k := range order {
		if g := groups[k]; g.Count > 0 {
			a.write(*g)
		}
	}
}

func (a *egressAudit) write(rec audit.Record) {
	if err := a.s.log.Write(rec); err != nil {
		a.s.logger.Error("egress audit record lost", "call", a.c.id, "err", err)
	}
}
