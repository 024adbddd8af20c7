package mcpserver

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// DefaultMaxSessions caps the MCP sessions an HTTP handler keeps at once
// when HTTPOptions leave it zero.
const DefaultMaxSessions = 64

// codeTooManySessions is the JSON-RPC error code (in the range the
// protocol leaves to servers) of an initialize refused at the cap.
const codeTooManySessions = -32000

// sessionCap bounds the MCP sessions kept over HTTP: each holds the SDK's
// state and, once it calls a tool, a broker session, for as long as its
// client keeps it or its idle timeout lets it. A POST that would start a
// session (initialize, server/discover: those without an Mcp-Session-Id)
// is refused while the sessions open and those being started reach max.
// A session being started may be counted twice for a moment (started and
// not yet through its POST), which errs on the side of refusing.
type sessionCap struct {
	max  int
	live func() int // the sessions open now
	mu   sync.Mutex
	// starting counts the POSTs starting a session, not yet answered.
	starting int
	refused  atomic.Uint64
}

// enter admits the start of a session, or returns the reason it is
// refused. leave must be called when the POST is answered.
func (c *sessionCap) enter() (leave func(), refusal string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n := c.live() + c.starting; n >= c.max {
		c.refused.Add(1)
		return nil, fmt.Sprintf("airlock serve keeps at most %d MCP sessions at once (--max-sessions) and has %d: end one (DELETE /mcp with its Mcp-Session-Id) or wait until one has been idle for --idle-timeout, then initialize again", c.max, n)
	}
	c.starting++
	return func() {
		c.mu.Lock()
		c.starting--
		c.mu.Unlock()
	}, ""
}
