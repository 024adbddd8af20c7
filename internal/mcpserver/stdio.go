package mcpserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxLineBytes caps one line (one message) on the stdio transport.
const DefaultMaxLineBytes = mcp.DefaultMaxLineLength

// StdioTransport is the newline-delimited JSON-RPC transport of `airlock
// mcp`. Unlike the SDK's IOTransport, which ends the session on the first
// line it cannot decode, it checks every line (see checkMessage), answers a
// bad one with a JSON-RPC error (-32700 or -32600) and reads on: one bad line
// from a client costs that line, not the session, its calls in flight and
// its background work.
type StdioTransport struct {
	// Reader and Writer carry the messages; neither is closed.
	Reader io.Reader
	Writer io.Writer
	// MaxLineBytes caps a line; a longer one is refused and skipped. Zero
	// means DefaultMaxLineBytes.
	MaxLineBytes int
	// MaxPendingBytes bounds the requests read whose answers are not yet
	// written, and those answers: while they hold more, the next line is
	// not read (a request larger than the bound is still read when nothing
	// else is pending). A request counts its length, at least 8 KiB (what
	// it costs while pending), until its answer is written, and an answer
	// (or a notification airlock sends) counts its length from when it is
	// ready until it is written, so a client that sends and does not read
	// its answers stops being read; a notification read while an answer is
	// unwritten counts too (admitNotification). It bounds the memory a
	// client's calls can take, since each is held several times over while
	// it is decoded and run, and each answer, up to the output cap and more
	// once encoded, until the client reads it: what is held is at most the
	// bound, plus the answers of the calls already read when it was
	// reached (the broker's admission bounds those that run). Zero means
	// DefaultMaxPendingBytes.
	MaxPendingBytes int64
}

// DefaultMaxPendingBytes is StdioTransport.MaxPendingBytes's default.
const DefaultMaxPendingBytes = 32 << 20

// minRequestCost is the least a request read counts against
// MaxPendingBytes, whatever its length: each holds a goroutine and the
// SDK's state until its answer is written, about 5 KiB (measured with
// pings whose answers could not be written), so a client's tiny requests
// are bounded in number as its large ones are in bytes.
const minRequestCost = 8 << 10

// minNotificationCost is the least a notification read counts against
// MaxPendingBytes while a request's answer is unwritten (see
// admitNotification): about 270 bytes in the SDK's queue, measured.
const minNotificationCost = 1 << 10

// Connect implements mcp.Transport.
func (t *StdioTransport) Connect(context.Context) (mcp.Connection, error) {
	limit := t.MaxLineBytes
	if limit <= 0 {
		limit = DefaultMaxLineBytes
	}
	budget := t.MaxPendingBytes
	if budget <= 0 {
		budget = DefaultMaxPendingBytes
	}
	c := &lineConn{w: t.Writer, incoming: make(chan lineRead), closed: make(chan struct{}),
		budget: budget, pending: map[any]int64{}, freed: make(chan struct{}, 1)}
	go c.readLoop(bufio.NewReaderSize(t.Reader, 64<<10), limit)
	return c, nil
}

// lineConn is a connection over newline-delimited JSON that hands the SDK
// only messages that passed checkMessage.
type lineConn struct {
	wmu sync.Mutex
	w   io.Writer

	incoming  chan lineRead
	closed    chan struct{}
	closeOnce sync.Once

	// Requests read and not yet answered, by id, and what they count; held
	// sums what the requests read count until their answers are written,
	// what the notifications read since unwritten was last zero count
	// (notes), and the lengths of the messages being written.
	pmu       sync.Mutex
	budget    int64
	held      int64
	pending   map[any]int64
	unwritten int           // requests read whose answers are not yet written
	notes     int64         // what the notifications in held count
	freed     chan struct{} // signalled when a written answer frees bytes
}

// admission is what admit decided.
type admission int

const (
	admitted  admission = iota
	duplicate           // id is that of a request not yet answered
	closing             // the connection closed while waiting
)

// admit waits until a request of n bytes (counted as at least
// minRequestCost) fits the pending budget (or nothing is pending) and
// counts it under id. A request whose id is that of one not yet answered
// is not counted: its answer (the SDK's, or the transport's refusal) would
// free the bytes of the one still in flight.
func (c *lineConn) admit(id any, n int64) admission {
	n = max(n, minRequestCost)
	for {
		c.pmu.Lock()
		if _, dup := c.pending[id]; dup {
			c.pmu.Unlock()
			return duplicate
		}
		if c.held == 0 || c.held+n <= c.budget {
			c.held += n
			c.pending[id] = n
			c.unwritten++
			c.pmu.Unlock()
			return admitted
		}
		c.pmu.Unlock()
		select {
		case <-c.freed:
		case <-c.closed:
			return closing
		}
	}
}

// admitNotification waits until a notification of n bytes fits the pending
// budget while a request's answer is unwritten, and counts it (as at least
// minNotificationCost) until every answer owed is written. The SDK handles
// initialize, and a call it refuses before running it, in order with the
// notifications: while such an answer cannot be written, every message
// read after it waits in the SDK's queue, which has no bound. With no
// answer owed, nothing can hold that queue up, and a notification is not
// counted.
func (c *lineConn) admitNotification(n int64) admission {
	n = max(n, minNotificationCost)
	for {
		c.pmu.Lock()
		if c.unwritten == 0 || c.held+n <= c.budget {
			if c.unwritten > 0 {
				c.held += n
				c.notes += n
			}
			c.pmu.Unlock()
			return admitted
		}
		c.pmu.Unlock()
		select {
		case <-c.freed:
		case <-c.closed:
			return closing
		}
	}
}

// writing counts a message of length bytes about to be written against
// the pending budget until release (an answer the client does not read
// is held in memory as long as any request), and for an answer (id
// valid) frees the id of its request for a new request, returning what
// the request counts, to release once the answer is written.
func (c *lineConn) writing(id jsonrpc.ID, length int64) int64 {
	c.pmu.Lock()
	defer c.pmu.Unlock()
	c.held += length
	if !id.IsValid() {
		return 0
	}
	n := c.pending[id.Raw()]
	delete(c.pending, id.Raw())
	return n
}

// release frees the pending budget a written message held: its own
// length, and for an answer what its request counts (n).
func (c *lineConn) release(n, length int64) {
	c.pmu.Lock()
	c.held -= n + length
	if n == 0 {
		c.pmu.Unlock()
		c.signal()
		return
	}
	c.unwritten--
	if c.unwritten == 0 {
		// Every answer owed is written: the SDK's queue is not held up,
		// and the notifications before it have been handled.
		c.held -= c.notes
		c.notes = 0
	}
	c.pmu.Unlock()
	c.signal()
}

// signal wakes a reader waiting for the pending budget.
func (c *lineConn) signal() {
	select {
	case c.freed <- struct{}{}:
	default:
	}
}

type lineRead struct {
	msg jsonrpc.Message
	err error
}

// errLineTooLong marks a line over the cap; the rest of it is skipped.
var errLineTooLong = errors.New("line too long")

// readLoop reads lines until the reader ends or the connection closes. A line
// that fails checkMessage is answered here and never reaches the SDK. It
// leaks while a Read of the underlying reader blocks after Close, as the
// SDK's transport does: a read of stdin cannot portably be interrupted.
func (c *lineConn) readLoop(r *bufio.Reader, limit int) {
	for {
		line, err := readLine(r, limit)
		if errors.Is(err, errLineTooLong) {
			if werr := c.writeLine(encodeReply(invalidRequest(nil, "a message is longer than %d bytes", limit))); werr != nil {
				c.deliver(lineRead{err: werr})
				return
			}
			continue
		}
		if len(bytes.TrimSpace(line)) > 0 {
			msg, bad := checkMessage(line)
			if req, ok := msg.(*jsonrpc.Request); bad == nil && ok && req.ID.IsValid() {
				switch c.admit(req.ID.Raw(), int64(len(line))) {
				case closing:
					return
				case duplicate:
					bad = invalidRequest(messageID(msg), "the id %.64s is already in use by a request not yet answered", messageID(msg))
				}
			} else if bad == nil && ok {
				if c.admitNotification(int64(len(line))) == closing {
					return
				}
			}
			if bad != nil {
				if werr := c.writeLine(encodeReply(bad)); werr != nil {
					c.deliver(lineRead{err: werr})
					return
				}
			} else if !c.deliver(lineRead{msg: msg}) {
				return
			}
		}
		if err != nil {
			c.deliver(lineRead{err: err})
			return
		}
	}
}

// deliver hands r to Read, or reports false once the connection is closed.
func (c *lineConn) deliver(r lineRead) bool {
	select {
	case c.incoming <- r:
		return true
	case <-c.closed:
		return false
	}
}

// readLine returns the next line without its newline. At the end of the
// input it returns the last, unterminated line (possibly empty) with io.EOF.
// A line longer than limit is consumed to its end and reported as
// errLineTooLong, without buffering more than limit bytes of it.
func readLine(r *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	tooLong := false
	for {
		chunk, err := r.ReadSlice('\n')
		if !tooLong {
			if len(line)+len(chunk) > limit+1 { // +1: the newline
				tooLong, line = true, nil
			} else {
				line = append(line, chunk...)
			}
		}
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case tooLong && (err == nil || errors.Is(err, io.EOF)):
			return nil, errLineTooLong
		case err != nil:
			return line, err
		}
		return bytes.TrimSuffix(line, []byte("\n")), nil
	}
}

// Read implements mcp.Connection.
func (c *lineConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.closed:
		return nil, io.EOF
	case r := <-c.incoming:
		return r.msg, r.err
	}
}

// Write implements mcp.Connection.
func (c *lineConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	data, err := encodeMessage(msg)
	if err != nil {
		return fmt.Errorf("encoding a message: %w", err)
	}
	// The id is free again before the client can read the answer: a
	// client may reuse it as soon as it has. The request's bytes, and the
	// answer's, stay counted until the answer is written: a client that
	// does not read its answers must not have more requests read, each
	// adding an answer held here.
	var id jsonrpc.ID
	if resp, ok := msg.(*jsonrpc.Response); ok {
		id = resp.ID
	}
	n := c.writing(id, int64(len(data)))
	defer c.release(n, int64(len(data)))
	return c.writeLine(data)
}

// encodeMessage is jsonrpc.EncodeMessage, which re-encodes a response's
// result: the encoder compacts (reads through) a raw result again, for a
// tool's answer its whole text, about 55 us of a 4 KiB read_file's answer.
// A successful response's result is the SDK's own encoding of the
// result, compact JSON on one line, so it is written into the envelope
// as it is; anything else goes through the SDK's encoder.
func encodeMessage(msg jsonrpc.Message) ([]byte, error) {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok || resp.Error != nil || !resp.ID.IsValid() || !compactObject(resp.Result) {
		return jsonrpc.EncodeMessage(msg)
	}
	var idb bytes.Buffer
	enc := json.NewEncoder(&idb)
	enc.SetEscapeHTML(false) // as the SDK's encoder
	if err := enc.Encode(resp.ID.Raw()); err != nil {
		return nil, err
	}
	id := bytes.TrimSuffix(idb.Bytes(), []byte("\n"))
	const head, mid = `{"jsonrpc":"2.0","id":`, `,"result":`
	b := make([]byte, 0, len(head)+len(id)+len(mid)+len(resp.Result)+2) // and the newline writeLine adds
	b = append(b, head...)
	b = append(b, id...)
	b = append(b, mid...)
	b = append(b, resp.Result...)
	return append(b, '}'), nil
}

// compactObject reports whether raw looks like what an encoder writes for
// an object: braces at both ends, no newline (which would end the line).
func compactObject(raw []byte) bool {
	return len(raw) >= 2 && raw[0] == '{' && raw[len(raw)-1] == '}' && bytes.IndexByte(raw, '\n') < 0
}

// writeLine writes data and a newline as one write.
func (c *lineConn) writeLine(data []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.w.Write(append(data, '\n'))
	return err
}

// Close implements mcp.Connection: Read returns io.EOF from now on.
func (c *lineConn) Close() error {
	c.closeOnce.Do(func() { close(c.closed) })
	return nil
}

// SessionID implements mcp.Connection; a stdio session has no id.
func (c *lineConn) SessionID() string { return "" }
