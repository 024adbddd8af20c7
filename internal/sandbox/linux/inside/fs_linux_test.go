package inside

import (
	"testing"

	"github.com/airlockhq/airlock/internal/sandbox/linux/initproto"
)

func TestUnderWritable(t *testing.T) {
	mounts := []initproto.Mount{{Target: "/w", Writable: true}, {Target: "/w/.git"}, {Target: "/r"}}
	for _, tc := range []struct {
		p    string
		want bool
	}{
		{"/w/.claude", true},
		{"/w/.git/hooks", false},
		{"/r/x", false},
		{"/elsewhere", false},
		{"/w/.gitx", true},
	} {
		if got := underWritable(tc.p, mounts); got != tc.want {
			t.Errorf("underWritable(%q) = %v, want %v", tc.p, got, tc.want)
		}
	}
}

func TestEnterCwdRefusesUnclean(t *testing.T) {
	mounts := []initproto.Mount{{Target: "/w", Writable: true}}
	for _, cwd := range []string{"relative", "/w/../etc", "/w/./x", "/etc", "/proc/self/fd/3"} {
		if err := enterCwd(cwd, mounts); err == nil {
			t.Errorf("enterCwd(%q) succeeded", cwd)
		}
	}
}
