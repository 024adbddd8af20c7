package initproto

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestConfigExactStrings: paths (and a command's arguments and
// environment) that are not UTF-8 reach the init byte for byte; JSON alone
// would turn "\xff/.git" into "\ufffd/.git", and the init would protect a
// path that does not exist.
func TestConfigExactStrings(t *testing.T) {
	bad := "/w/\xff\xfe/repo/.git"
	in := Config{
		Mounts:   []Mount{{Source: "/w\x80", Target: "/w\x80", Writable: true}, {Source: "/ok", Target: "/ok"}},
		Masks:    []string{"/w/.env", bad + "x"},
		ReadOnly: []string{bad, "/w/.git/hooks"}, ReadOnlyDirs: []string{bad},
		Placeholders: []string{"/w/\xc3"}, Env: []string{"A=\xff"}, Command: []string{"echo", "\xfe"},
		Cwd: "/w\x80", Hostname: "h",
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out Config
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out.ReadOnly, in.ReadOnly) || !slices.Equal(out.Masks, in.Masks) || !slices.Equal(out.ReadOnlyDirs, in.ReadOnlyDirs) ||
		!slices.Equal(out.Placeholders, in.Placeholders) || !slices.Equal(out.Env, in.Env) || !slices.Equal(out.Command, in.Command) ||
		!slices.Equal(out.Mounts, in.Mounts) || out.Cwd != in.Cwd || out.Hostname != "h" {
		t.Errorf("round trip changed the config:\n in %#v\nout %#v", in, out)
	}
	cb, err := json.Marshal(Claim{Placeholders: []string{"/ok", bad}})
	if err != nil {
		t.Fatal(err)
	}
	var c Claim
	if err := json.Unmarshal(cb, &c); err != nil || !slices.Equal(c.Placeholders, []string{"/ok", bad}) {
		t.Errorf("claim round trip: %+q, %v", c.Placeholders, err)
	}
	if err := json.Unmarshal([]byte(`{"raw":{"9":"AA=="}}`), &out); err == nil {
		t.Error("a raw string beyond the config's strings was accepted")
	}
}
