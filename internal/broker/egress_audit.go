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
// egressSingles decisions get a record each; every later one is counted
// into a record that stands for all the decisions alike (same decision,
// rule, host and port: audit.Record.Count, from Time to Until), at most
// egressGroups of them, and those records are written when the proxy stops
// and egressFlushEvery after the first of them was counted (background work
// runs for hours). Nothing is dropped: every decision is in a record, alone
// or counted.
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

// decide records one decision of the proxy.
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
	if !ok && len(a.groups) >= egressGroups {
		// Past the groups too: one more stands for every other host.
		k = egressKey{decision: rec.Decision, rule: rec.Rule}
		if g, ok = a.groups[k]; !ok {
			rec.Host, rec.Port, rec.Addr = "", 0, ""
			rec.Reason = fmt.Sprintf("decisions on hosts past the first %d of this record's kind, each with its own reason; the first: %s", egressGroups, rec.Reason)
		}
	}
	if !ok {
		if a.groups == nil {
			a.groups = map[egressKey]*audit.Record{}
			a.timer = time.AfterFunc(egressFlushEvery, a.flush)
		}
		g = &rec
		a.groups[k] = g
		a.order = append(a.order, k)
	}
	g.Count++
	g.Until = rec.Time
	a.mu.Unlock()
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
		a.write(*groups[k])
	}
}

func (a *egressAudit) write(rec audit.Record) {
	if err := a.s.log.Write(rec); err != nil {
		a.s.logger.Error("egress audit record lost", "call", a.c.id, "err", err)
	}
}
