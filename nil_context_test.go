package airlock_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/airlockhq/airlock"
)

// TestNilContextLeavesSessionClosable: a program that passes a nil context
// (a context.Context field it forgot to set) gets an error, and the
// session still closes. Call once panicked after counting the call in
// flight, so a program that recovered the panic (an HTTP server does) had
// a session whose Close waited forever.
func TestNilContextLeavesSessionClosable(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s, err := airlock.Open(&airlock.Options{Dir: dir, RecordsDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	var nilCtx context.Context
	func() {
		defer func() {
			if p := recover(); p != nil {
				t.Errorf("Call with a nil context panicked: %v", p)
			}
		}()
		if res, err := s.Call(nilCtx, "shell", `{"command":"echo hi"}`); err == nil {
			t.Errorf("Call with a nil context ran: %+v", res)
		}
	}()
	closed := make(chan error)
	go func() { closed <- s.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 30e9)
	defer cancel()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("Close is stuck after a call with a nil context")
	}
}
