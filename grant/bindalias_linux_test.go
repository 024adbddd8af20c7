package grant

import (
	"slices"
	"testing"
)

// TestMountAliases: a bind mount of a directory of a file system that is
// mounted elsewhere too shows that directory under two paths; a grant
// is judged by both (aliasRefusal).
func TestMountAliases(t *testing.T) {
	mounts := []mountEntry{
		{point: "/", fstype: "ext4", dev: "8:1", root: "/"},
		{point: "/proc", fstype: "proc", dev: "0:20", root: "/"},
		{point: "/srv/host", fstype: "ext4", dev: "8:1", root: "/"},
		{point: "/srv/etc", fstype: "ext4", dev: "8:1", root: "/etc"},
		{point: "/data", fstype: "xfs", dev: "8:2", root: "/"},
		{point: "/w/proj", fstype: "xfs", dev: "8:2", root: "/proj"},
		{point: "/tmp", fstype: "ext4", dev: "8:1", root: "/tmp/systemd-private-1/tmp"},
	}
	for _, tt := range []struct {
		p        string
		writable bool
		refused  bool
	}{
		{"/srv/host/etc", true, true},
		{"/srv/host/etc", false, false},
		{"/srv/etc/ssh", true, true},
		{"/srv/host", false, true},
		{"/srv", false, true},
		{"/srv/host/home/u", true, false},
		{"/w", true, false},
		{"/w/proj", true, false},
		{"/data/proj", true, false},
		{"/tmp/x", true, false},
		{"/etc", false, false},
	} {
		self, held := mountAliases(tt.p, mounts)
		why := aliasRefusal(self, held, tt.writable)
		if (why != "") != tt.refused {
			t.Errorf("%s (writable %v): aliases %v, held %v: refusal %q, want refused %v", tt.p, tt.writable, self, held, why, tt.refused)
		}
	}
	if self, _ := mountAliases("/srv/host/etc/ssh", mounts); !slices.Contains(self, "/etc/ssh") {
		t.Errorf("aliases of /srv/host/etc/ssh: %v, want /etc/ssh among them", self)
	}
}
