package mcpserver

import (
	"context"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// owed counts the answers the server owes its clients: the requests read
// on its connections and not yet answered, and the HTTP POSTs being
// served. Shutdown waits on it (wait) rather than pausing: closing an SDK
// session drops an answer its handler has returned but the session has not
// yet written.
type owed struct {
	mu   sync.Mutex
	n    int
	zero chan struct{} // closed when n reaches 0; nil while nobody waits
}

// add changes the count by d.
func (o *owed) add(d int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.n += d
	if o.n == 0 && o.zero != nil {
		close(o.zero)
		o.zero = nil
	}
}

// wait returns once nothing is owed, or when grace has passed.
func (o *owed) wait(grace time.Duration) {
	o.mu.Lock()
	if o.n == 0 {
		o.mu.Unlock()
		return
	}
	if o.zero == nil {
		o.zero = make(chan struct{})
	}
	zero := o.zero
	o.mu.Unlock()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-zero:
	case <-t.C:
	}
}

// countedTransport counts on o every request its connection reads until
// the answer to it is written (or the connection closes, after which none
// can be).
type countedTransport struct {
	mcp.Transport
	o *owed
}

func (t countedTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &countedConn{Connection: c, o: t.o, pending: map[jsonrpc.ID]bool{}}, nil
}

// countedConn is one connection of a countedTransport.
type countedConn struct {
	mcp.Connection
	o       *owed
	mu      sync.Mutex
	pending map[jsonrpc.ID]bool
	closed  bool
}

func (c *countedConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if req, ok := msg.(*jsonrpc.Request); ok && err == nil && req.ID.IsValid() {
		c.mu.Lock()
		if !c.closed && !c.pending[req.ID] {
			c.pending[req.ID] = true
			c.o.add(1)
		}
		c.mu.Unlock()
	}
	return msg, err
}

func (c *countedConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	if resp, ok := msg.(*jsonrpc.Response); ok && resp.ID.IsValid() {
		c.mu.Lock()
		if c.pending[resp.ID] {
			delete(c.pending, resp.ID)
			c.o.add(-1)
		}
		c.mu.Unlock()
	}
	return err
}

func (c *countedConn) Close() error {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		c.o.add(-len(c.pending))
		clear(c.pending)
	}
	c.mu.Unlock()
	return c.Connection.Close()
}
