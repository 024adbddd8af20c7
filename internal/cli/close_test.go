package cli

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

// TestCloseOnceSaysAFailedClose: airlock exec and call close their session
// once, and a close that fails (its close record or the one fsync that
// also covers the call's record) is said on stderr, not dropped.
func TestCloseOnceSaysAFailedClose(t *testing.T) {
	var stderr bytes.Buffer
	env := &Env{Stderr: &stderr}
	calls := 0
	closeSession := closeOnce(env, "airlock call", func() error {
		calls++
		return errors.New("syncing audit log: input/output error")
	})
	closeSession()
	closeSession() // the deferred call after the explicit one
	if calls != 1 {
		t.Errorf("close ran %d times, want once", calls)
	}
	got := stderr.String()
	if !strings.Contains(got, "airlock call: closing the session: syncing audit log: input/output error") || strings.Count(got, "\n") != 1 {
		t.Errorf("stderr = %q, want one line naming the failed close and its error", got)
	}

	stderr.Reset()
	closeOnce(env, "airlock exec", func() error { return nil })()
	if stderr.Len() != 0 {
		t.Errorf("a clean close printed %q", stderr.String())
	}
}
