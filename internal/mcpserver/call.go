package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MetaKey is the _meta key under which every tool result carries its CallMeta.
const MetaKey = "airlock/call"

// Outcome classes the server adds to the broker's (broker.ClassOK, ...),
// defined with them in package wire.
const (
	// ClassUnavailable is the class of a call that never reached the broker:
	// the server is shutting down, or the session could not be opened or
	// has failed. It is in _meta and /metrics.
	ClassUnavailable = wire.ClassUnavailable
	// ClassBusy is the /metrics class of a call the broker refused because
	// its session had every slot running and its queue full: nothing of the
	// grant refused it. (_meta keeps the broker's class, refused, with the
	// rule "admission", as the audit record does.)
	ClassBusy = wire.ClassBusy
)

// admissionRule is the broker's Decision.Rule for a call it refused because
// the session was busy.
const admissionRule = "admission"

// metricClass is the class /metrics counts res under.
func metricClass(res *broker.Result) wire.Class {
	if res.Class == broker.ClassRefused && res.Decision.Rule == admissionRule {
		return ClassBusy
	}
	return res.Class
}

// CallMeta is the structured metadata of one call, sent in the result's
// _meta[MetaKey]. The text content stays what the model reads.
type CallMeta struct {
	// CallID and Session name the call in the audit log.
	CallID  string `json:"call_id,omitempty"`
	Session string `json:"session,omitempty"`
	// Class is the broker's outcome class ("ok", "refused", "timeout", ...),
	// or ClassUnavailable.
	Class wire.Class `json:"class"`
	// Rule names the grant rules that allowed the call, or the one that
	// refused it.
	Rule string `json:"rule,omitempty"`
	// Risks lists what the grant allowed only as a risk.
	Risks []string `json:"risks,omitempty"`
	// Truncated reports that the content was cut at a cap.
	Truncated bool `json:"truncated"`
	// DurationMS is the call's wall time as the server saw it.
	DurationMS float64 `json:"duration_ms"`
	// Meta holds the tool's metadata: exit code, signal, omitted bytes, the
	// limit that ended the call and every limit it hit, and the isolation
	// that ran it (with the limits the host did not enforce, if any).
	wire.Meta
}

// Fixed sentences for calls that never reached the broker.
const (
	sentenceShutdown = "airlock is shutting down and takes no new calls"
	sentenceNoSess   = "airlock could not open a session for this connection; see the server's log"
	sentenceClosed   = "this airlock session is closed"
	sentenceAudit    = "airlock could not write its audit log and refuses calls until that is fixed"
)

// handler returns the SDK tool handler for the tool called name.
func (s *Server) handler(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		start := time.Now()
		if !s.enter() {
			return s.unavailable(name, sentenceShutdown, start), nil
		}
		defer s.leave()
		sess, err := s.session(ctx, req.Session)
		if err != nil {
			sentence := sentenceNoSess
			if errors.Is(err, errShutdown) {
				sentence = sentenceShutdown
			}
			return s.unavailable(name, sentence, start), nil
		}
		args := req.Params.Arguments
		if len(args) == 0 || string(args) == "null" {
			args = json.RawMessage("{}")
		}
		stop := s.progress(ctx, req, name)
		res, err := sess.Call(ctx, name, args)
		stop()
		if err != nil {
			s.logger.Error("call failed", "session", sess.ID(), "tool", name, "err", err)
			sentence := sentenceClosed
			if errors.Is(err, broker.ErrAudit) {
				sentence = sentenceAudit
			}
			return s.unavailable(name, sentence, start), nil
		}
		d := time.Since(start)
		s.metrics.observeCall(name, metricClass(res), d)
		s.metrics.observeCost(name, res.Output.Meta.Cost)
		return toResult(sess.ID(), res, d), nil
	}
}

// toResult turns a broker result into the MCP result the client reads.
func toResult(session string, res *broker.Result, d time.Duration) *mcp.CallToolResult {
	meta := CallMeta{
		CallID:     res.CallID,
		Session:    session,
		Class:      res.Class,
		Rule:       res.Decision.Rule,
		Risks:      res.Decision.Risks,
		Truncated:  res.Output.Truncated,
		DurationMS: float64(d.Microseconds()) / 1000,
		Meta:       res.Output.Meta,
	}
	return &mcp.CallToolResult{
		Content: []mcp.Content{&mcp.TextContent{Text: res.Output.Content}},
		IsError: res.Output.IsError || res.Class != broker.ClassOK,
		Meta:    mcp.Meta{MetaKey: meta},
	}
}

// unavailable is the result of a call that never reached the broker.
func (s *Server) unavailable(name, sentence string, start time.Time) *mcp.CallToolResult {
	d := time.Since(start)
	s.metrics.observeCall(name, ClassUnavailable, d)
	return &mcp.CallToolResult{
		Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("[airlock: %s] %s", name, sentence)}},
		IsError: true,
		Meta:    mcp.Meta{MetaKey: CallMeta{Class: ClassUnavailable, DurationMS: float64(d.Microseconds()) / 1000}},
	}
}

// progress sends a progress notification every ProgressInterval while a call
// runs, if the request carried a progress token. The returned func stops it
// and waits until no notification is being sent.
func (s *Server) progress(ctx context.Context, req *mcp.CallToolRequest, name string) (stop func()) {
	token := req.Params.GetProgressToken()
	if token == nil {
		return func() {}
	}
	// The request's context routes the notification to the request's stream
	// (streamable HTTP); cancelling it stops the ticker.
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		every := s.opts.ProgressInterval
		t := time.NewTicker(every)
		defer t.Stop()
		for n := 1; ; n++ {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			elapsed := time.Duration(n) * every
			err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: token,
				Progress:      float64(n),
				Message:       fmt.Sprintf("%s still running after %s", name, elapsed),
			})
			if err != nil && ctx.Err() == nil {
				s.logger.Debug("progress notification not sent", "tool", name, "err", err)
			}
		}
	}()
	return func() { cancel(); <-done }
}
