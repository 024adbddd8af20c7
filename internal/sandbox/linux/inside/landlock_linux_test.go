package inside

import (
	"testing"

	"github.com/airlockhq/airlock/internal/sandbox/linux/initproto"
)

// TestEarlyLandlock: a warm sandbox makes its ruleset before protect only
// when no rule's path is one protect mounts over, or lies below one.
func TestEarlyLandlock(t *testing.T) {
	w := []initproto.Mount{{Source: "/h/w", Target: "/w", Writable: true}, {Source: "/h/w/sub", Target: "/w/sub", Writable: true}}
	tests := []struct {
		name string
		cfg  initproto.Config
		want bool
	}{
		{"no protected paths", initproto.Config{Mounts: w}, true},
		{"protected paths inside the grant", initproto.Config{Mounts: w, ReadOnly: []string{"/w/.git", "/w/.bashrc"}, Masks: []string{"/w/.env"}}, true},
		{"a protected path that is a writable grant", initproto.Config{Mounts: w, ReadOnly: []string{"/w/sub"}}, false},
		{"a denied directory above a writable grant", initproto.Config{Mounts: w, Masks: []string{"/w"}}, false},
		{"a name that only shares a prefix", initproto.Config{Mounts: w, Masks: []string{"/w/su"}}, true},
		{"a denied device", initproto.Config{Mounts: w, Masks: []string{"/dev/null"}}, false},
		{"an egress proxy", initproto.Config{Mounts: w, ProxySocket: "/h/proxy.sock"}, false},
	}
	for _, tt := range tests {
		if got := earlyLandlock(&tt.cfg); got != tt.want {
			t.Errorf("%s: earlyLandlock = %v, want %v", tt.name, got, tt.want)
		}
	}
}
