package airlock

import "testing"

// Options.AllowUnenforcedLimits reaches the session's grant, with or
// without a grant of its own.
func TestOpenAllowUnenforcedLimits(t *testing.T) {
	for _, allow := range []bool{false, true} {
		s, err := Open(&Options{Dir: t.TempDir(), RecordsDir: t.TempDir(), Unsandboxed: true, Pool: -1, AllowUnenforcedLimits: allow})
		if err != nil {
			t.Fatal(err)
		}
		if got := s.s.Grant().AllowsUnenforcedLimits(); got != allow {
			t.Errorf("AllowUnenforcedLimits %v: the grant allows unenforced limits: %v", allow, got)
		}
		s.Close()
	}
}
