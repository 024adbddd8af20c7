package grant

import (
	"slices"
	"testing"
)

// TestWithKeepsRestrictions: With widens a grant by flags, and never drops
// what g restricts beyond its spec: the paths Guard hid and kept, the
// nested paths Remember protected. It once rebuilt the grant from the
// spec alone, so a guarded grant with one flag more (the Go API's
// AllowUnenforcedLimits) showed the hidden file to its sandboxes.
func TestWithKeepsRestrictions(t *testing.T) {
	T := fixture(t, "ws/token", "ws/app.conf", "ws/sub/plain", "more/")
	g := mustParse(t, T, "[paths]\nread_write = [\"ws\"]\n")
	g = g.Remember([]ProtectedPath{{Path: T + "/ws/sub/plain", Name: ".git"}})
	g, err := g.Guard([]string{T + "/ws/token"}, []string{T + "/ws/app.conf"})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []Flags{{AllowUnenforcedLimits: true}, {ReadOnly: []string{T + "/more"}}, {Limits: Limits{Time: 5e9}}} {
		w, err := g.With(T, f)
		if err != nil {
			t.Fatal(err)
		}
		if d := w.CheckPath(T+"/ws/token", false); d.Allowed || !slices.Contains(w.Masks(), T+"/ws/token") {
			t.Errorf("With(%+v): the hidden file is readable", f)
		}
		for _, p := range []string{T + "/ws/app.conf", T + "/ws/sub/plain"} {
			if d := w.CheckPath(p, true); d.Allowed || !slices.Contains(w.Protected(), p) {
				t.Errorf("With(%+v): %s is writable", f, p)
			}
		}
	}
}
