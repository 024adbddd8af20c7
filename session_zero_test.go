package airlock

import (
	"context"
	"errors"
	"testing"
)

// TestZeroSessionIsClosed checks that a Session Open did not return (nil,
// or the zero value an embedder declared) answers as a closed one: Call
// fails with ErrClosed and runs nothing, Close and ID do nothing, and
// none of them panics.
func TestZeroSessionIsClosed(t *testing.T) {
	for name, s := range map[string]*Session{"nil": nil, "zero": {}} {
		t.Run(name, func(t *testing.T) {
			if res, err := s.Call(context.Background(), "read_file", `{"path":"x"}`); !errors.Is(err, ErrClosed) || res != nil {
				t.Errorf("Call = %v, %v; want ErrClosed", res, err)
			}
			if err := s.Close(); err != nil {
				t.Errorf("Close = %v, want nil", err)
			}
			if id := s.ID(); id != "" {
				t.Errorf("ID = %q, want empty", id)
			}
		})
	}
}
