package toolserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/coder/websocket"

	"github.com/airlockhq/airlock/wire"
)

// Conn carries frame payloads (JSON) between the broker and the hands.
// Send is safe for concurrent use; Recv is called by one goroutine at a
// time; Close ends both directions and unblocks a Recv in progress.
type Conn interface {
	Send(ctx context.Context, payload []byte) error
	Recv(ctx context.Context) ([]byte, error)
	Close() error
}

// progressReader calls progress whenever bytes arrive, so a peer sending
// one large frame is seen alive long before the frame is whole.
type progressReader struct {
	r        io.Reader
	progress func()
}

func (p *progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 && p.progress != nil {
		p.progress()
	}
	return n, err
}

// Alive wraps c so that alive is called whenever bytes arrive from the
// peer, not only when a frame is complete. Only Conns made by this
// package support it; others are returned as they are.
func Alive(c Conn, alive func()) Conn {
	switch x := c.(type) {
	case *streamConn:
		x.r = &progressReader{r: x.r, progress: alive}
	case *wsConn:
		x.progress = alive
	}
	return c
}

// StreamConn returns a Conn over a byte stream (a child's stdin and stdout,
// `podman exec -i`, `ssh`): each payload is one wire frame. closer, when
// not nil, is closed by Close (it should unblock r).
func StreamConn(r io.Reader, w io.Writer, closer io.Closer) Conn {
	return &streamConn{r: r, w: w, c: closer}
}

type streamConn struct {
	r    io.Reader
	mu   sync.Mutex
	w    io.Writer
	c    io.Closer
	once sync.Once
}

func (s *streamConn) Send(_ context.Context, p []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return wire.WriteFrame(s.w, p)
}

func (s *streamConn) Recv(context.Context) ([]byte, error) { return wire.ReadFrame(s.r) }

func (s *streamConn) Close() error {
	var err error
	s.once.Do(func() {
		if s.c != nil {
			err = s.c.Close()
		}
	})
	return err
}

// wsConn is a Conn over a WebSocket: each payload is one binary message.
type wsConn struct {
	c        *websocket.Conn
	once     sync.Once
	progress func()
}

func newWSConn(c *websocket.Conn) *wsConn {
	// A message past the frame cap ends the connection before it is read.
	c.SetReadLimit(wire.MaxFrameSize)
	return &wsConn{c: c}
}

func (w *wsConn) Send(ctx context.Context, p []byte) error {
	if len(p) == 0 {
		return wire.ErrEmptyFrame
	}
	if len(p) > wire.MaxFrameSize {
		return wire.ErrFrameTooLarge
	}
	if err := w.c.Write(ctx, websocket.MessageBinary, p); err != nil {
		return fmt.Errorf("writing frame: %w", err)
	}
	return nil
}

func (w *wsConn) Recv(ctx context.Context) ([]byte, error) {
	typ, r, err := w.c.Reader(ctx)
	if err != nil {
		if websocket.CloseStatus(err) == websocket.StatusNormalClosure {
			return nil, io.EOF
		}
		return nil, fmt.Errorf("reading frame: %w", err)
	}
	if typ != websocket.MessageBinary {
		return nil, errors.New("reading frame: a text message where binary frames are expected")
	}
	p, err := io.ReadAll(&progressReader{r: r, progress: w.progress})
	if err != nil {
		return nil, fmt.Errorf("reading frame: %w", err)
	}
	if len(p) == 0 {
		return nil, fmt.Errorf("reading frame: %w", wire.ErrEmptyFrame)
	}
	return p, nil
}

func (w *wsConn) Close() error {
	w.once.Do(func() { _ = w.c.CloseNow() })
	return nil
}
