package toolserver_test

import (
	"slices"
	"testing"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/toolserver"
)

// TestCallFramePathsExact: a call's paths and command that are not UTF-8
// (a nested repository a sandbox made below a directory named "\xff")
// reach the hands byte for byte, so the mask lands on the path and not on
// one with U+FFFD in its place; the strict decoding still refuses an
// unknown field and a raw string with no place.
func TestCallFramePathsExact(t *testing.T) {
	call := &toolserver.Call{
		Command:      []string{"cat", "a\xff"},
		Cwd:          "/w/d\xfe",
		Mounts:       []sandbox.Mount{{Source: "/w", Writable: true}, {Source: "/w/r\xff", Target: "/w/r\xff"}},
		Masks:        []string{"/w/\xff/.git/hooks", "/w/ok/.git/hooks"},
		ReadOnly:     []string{"/w/\xff/.git/config"},
		ReadOnlyDirs: []string{"/w/\xc3"},
	}
	b, err := toolserver.EncodeFrame(&toolserver.Frame{Type: toolserver.TypeCall, ID: "call_1", Call: call})
	if err != nil {
		t.Fatal(err)
	}
	f, err := toolserver.DecodeFrame(b)
	if err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
	got := f.Call
	if !slices.Equal(got.Command, call.Command) || got.Cwd != call.Cwd || !slices.Equal(got.Mounts, call.Mounts) ||
		!slices.Equal(got.Masks, call.Masks) || !slices.Equal(got.ReadOnly, call.ReadOnly) || !slices.Equal(got.ReadOnlyDirs, call.ReadOnlyDirs) {
		t.Errorf("the call came through as %+v, want %+v", got, call)
	}
	for _, bad := range []string{
		`{"type":"call","id":"c","call":{"command":["x"],"cwd":"/","limits":{},"raw":{"7":"/w=="}}}`,
		`{"type":"call","id":"c","call":{"command":["x"],"cwd":"/","limits":{},"bogus":1}}`,
	} {
		if _, err := toolserver.DecodeFrame([]byte(bad)); err == nil {
			t.Errorf("decoded %s", bad)
		}
	}
}
