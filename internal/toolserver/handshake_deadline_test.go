package toolserver_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/airlockhq/airlock/internal/toolserver"
)

// TestStalledHandshakeIsClosed: a connection that shows the token and then
// never says hello is closed at the handshake's deadline. The hands' heartbeat
// starts only after the handshake, so such a connection was held for ever,
// and as one that showed the token it is never the one the connection cap
// pushes out: --max-connections of them kept every broker out of the hands.
func TestStalledHandshakeIsClosed(t *testing.T) {
	_, url := serveWith(t, &toolserver.ServerOptions{Grant: newWorkspace(t).grant, HandshakeTimeout: 300 * time.Millisecond})
	c, _, err := websocket.Dial(context.Background(), url, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + testToken}}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	ended := make(chan error, 1)
	go func() { _, _, err := c.Read(context.Background()); ended <- err }() // and never a hello
	select {
	case err := <-ended:
		if err == nil {
			t.Fatal("the hands sent a frame to a broker that never said hello")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a connection that showed the token and never said hello is still open 30 s on")
	}
}
