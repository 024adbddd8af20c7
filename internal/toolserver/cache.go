package toolserver

import (
	"context"
	"encoding/json"
	"io"
	"sync"
)

var jsonMarshal = json.Marshal

// resultCache records the result of every tool call the hands ran, by call
// id, so a call asked again (a retry after a reconnect, a duplicated frame)
// is answered from its first run and never runs twice. A call asked while
// its first run is in progress waits for that run. It keeps the newest
// entries up to a count and a byte total.
type resultCache struct {
	mu       sync.Mutex
	entries  map[string]*entry
	order    []string
	maxN     int
	maxBytes int
	bytes    int
}

type entry struct {
	sum  [32]byte
	done chan struct{}
	res  *Result // nil when the run was cut short
	size int
}

func newResultCache(maxN, maxBytes int) *resultCache {
	return &resultCache{entries: map[string]*entry{}, maxN: maxN, maxBytes: maxBytes}
}

// do returns the recorded result of id, waits for a run in progress, or
// runs run. run reports whether its result is an answer to keep; one that
// is not (a run cut short by its connection ending) is forgotten, and the
// next ask runs again. A call id asked with other content than its first
// run is refused. do returns nil when ctx ends first.
func (c *resultCache) do(ctx context.Context, id string, sum [32]byte, run func() (*Result, bool)) *Result {
	for {
		c.mu.Lock()
		e, ok := c.entries[id]
		if !ok {
			e = &entry{sum: sum, done: make(chan struct{})}
			c.entries[id] = e
			c.mu.Unlock()
			res, keep := run()
			c.mu.Lock()
			if keep {
				e.res = res
				e.size = resultSize(res)
				c.bytes += e.size
				c.order = append(c.order, id)
				c.trim()
			} else {
				delete(c.entries, id)
			}
			close(e.done)
			c.mu.Unlock()
			if !keep {
				return nil
			}
			return res
		}
		c.mu.Unlock()
		if e.sum != sum {
			return &Result{Error: "call id " + id + " was already used for another call"}
		}
		select {
		case <-e.done:
		case <-ctx.Done():
			return nil
		}
		if e.res != nil {
			return e.res
		}
		// The first run was cut short: run it here.
	}
}

// resultSize is about what r holds in memory: its streams and its egress
// decisions, each of which names a host the sandbox asked for.
func resultSize(r *Result) int {
	n := len(r.Stdout) + len(r.Stderr) + 256
	for _, d := range r.Egress {
		n += len(d.Sandbox) + len(d.Proto) + len(d.Host) + len(d.Rule) + len(d.Reason) + 96
	}
	return n
}

func (c *resultCache) trim() {
	for len(c.order) > c.maxN || c.bytes > c.maxBytes && len(c.order) > 1 {
		id := c.order[0]
		c.order = c.order[1:]
		if e, ok := c.entries[id]; ok {
			c.bytes -= e.size
			delete(c.entries, id)
		}
	}
}

// commandIDs remembers the ids of the commands the hands have started, on
// any connection, the newest max of them: a command is not recorded as a
// tool call is (its output went out as it ran), but a command asked again
// under an id it ran under is refused, never run twice.
type commandIDs struct {
	mu    sync.Mutex
	seen  map[string]bool
	order []string
	max   int
}

func newCommandIDs(max int) *commandIDs {
	return &commandIDs{seen: map[string]bool{}, max: max}
}

// add records id and reports whether it is new.
func (c *commandIDs) add(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen[id] {
		return false
	}
	c.seen[id] = true
	c.order = append(c.order, id)
	if len(c.order) > c.max {
		delete(c.seen, c.order[0])
		c.order = c.order[1:]
	}
	return true
}

// maxQueuedInput bounds the stdin a command has not read yet, on the hands.
const maxQueuedInput = 16 << 20

// inputQueue is a command's stdin on the hands: chunks arrive in any order
// from the connection's reader (which must never block on one command) and
// are read in sequence by the sandbox.
type inputQueue struct {
	mu      sync.Mutex
	cond    *sync.Cond
	next    int64
	pending map[int64]*Chunk
	buf     []byte
	eof     bool
	closed  bool
	max     int
	queued  int
}

func newInputQueue(max int) *inputQueue {
	q := &inputQueue{pending: map[int64]*Chunk{}, max: max}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// maxAhead bounds how far ahead of the next chunk of a command's stdin or
// output a chunk may arrive, on either side: chunks are sent in order on
// one connection (only a proxy that reorders a few brings one ahead), and
// an empty chunk, which a byte bound does not count, still takes room
// while it waits.
const maxAhead = 64

// put adds a chunk; it reports false when the queue is over its bound.
func (q *inputQueue) put(ch *Chunk) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if ch.Seq < q.next || q.pending[ch.Seq] != nil {
		return true // a duplicate
	}
	if ch.Seq-q.next >= maxAhead {
		return false
	}
	q.pending[ch.Seq] = ch
	q.queued += len(ch.Data)
	for {
		c, ok := q.pending[q.next]
		if !ok {
			break
		}
		delete(q.pending, q.next)
		q.next++
		q.buf = append(q.buf, c.Data...)
		if c.EOF {
			q.eof = true
		}
	}
	q.cond.Broadcast()
	return q.queued <= q.max
}

func (q *inputQueue) Read(p []byte) (int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for len(q.buf) == 0 && !q.eof && !q.closed {
		q.cond.Wait()
	}
	if len(q.buf) == 0 {
		return 0, io.EOF
	}
	n := copy(p, q.buf)
	q.buf = q.buf[n:]
	q.queued -= n
	return n, nil
}

func (q *inputQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.cond.Broadcast()
	q.mu.Unlock()
}
