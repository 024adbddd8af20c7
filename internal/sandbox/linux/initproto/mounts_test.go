package initproto

import "testing"

func TestHolding(t *testing.T) {
	mounts := []Mount{
		{Source: "/h/work", Target: "/work", Writable: true},
		{Source: "/h/ro", Target: "/work/ro"},
		{Source: "/h/deep", Target: "/work/ro/deep/", Writable: true}, // trailing slash
		{Source: "/h/ab", Target: "/a/b"},
		{Source: "/h/abc", Target: "/a/bc", Writable: true},
		{Source: "/h/dup", Target: "/work/ro"}, // same target: the first wins
	}
	for _, tc := range []struct {
		p        string
		want     string // source of the holding mount, "" for none
		rel      string
		hostPath string
	}{
		{"/work", "/h/work", ".", "/h/work"},
		{"/work/", "/h/work", ".", "/h/work"},
		{"/work/x/y", "/h/work", "x/y", "/h/work/x/y"},
		{"/workshop", "", "", ""}, // a prefix, not a parent
		{"/work/ro", "/h/ro", ".", "/h/ro"},
		{"/work/ro/x", "/h/ro", "x", "/h/ro/x"},
		{"/work/rot", "/h/work", "rot", "/h/work/rot"},
		{"/work/ro/deep", "/h/deep", ".", "/h/deep"},
		{"/work/ro/deep/z/", "/h/deep", "z", "/h/deep/z"},
		{"/work/ro/deeper", "/h/ro", "deeper", "/h/ro/deeper"},
		{"/a/b/c", "/h/ab", "c", "/h/ab/c"},
		{"/a/bc/d", "/h/abc", "d", "/h/abc/d"},
		{"/a/bcd", "", "", ""},
		{"/a", "", "", ""},
		{"/", "", "", ""},
	} {
		m, ok := Holding(mounts, tc.p)
		if got := map[bool]string{true: m.Source}[ok]; got != tc.want {
			t.Errorf("Holding(%q) = %q, want %q", tc.p, got, tc.want)
			continue
		}
		if !ok {
			continue
		}
		if got := m.Rel(tc.p); got != tc.rel {
			t.Errorf("Rel(%q) in %q = %q, want %q", tc.p, m.Target, got, tc.rel)
		}
		if got := m.HostPath(tc.p); got != tc.hostPath {
			t.Errorf("HostPath(%q) in %q = %q, want %q", tc.p, m.Target, got, tc.hostPath)
		}
	}
}

// A mount of / holds every path.
func TestHoldingRoot(t *testing.T) {
	mounts := []Mount{{Source: "/h/root", Target: "/"}, {Source: "/h/etc", Target: "/etc"}}
	for p, want := range map[string]string{"/": "/h/root", "/x": "/h/root", "/etc": "/h/etc", "/etcx": "/h/root", "/etc/passwd": "/h/etc"} {
		m, ok := Holding(mounts, p)
		if !ok || m.Source != want {
			t.Errorf("Holding(%q) = %q, %v, want %q", p, m.Source, ok, want)
		}
	}
	if m, _ := Holding(mounts, "/x/y"); m.HostPath("/x/y") != "/h/root/x/y" {
		t.Errorf("HostPath(/x/y) = %q", m.HostPath("/x/y"))
	}
	if m, _ := Holding(mounts, "/"); m.Rel("/") != "." {
		t.Errorf("Rel(/) = %q", m.Rel("/"))
	}
}

func TestWithin(t *testing.T) {
	for _, tc := range []struct {
		p, dir string
		want   bool
	}{
		{"/a/b", "/a/b", true},
		{"/a/b/", "/a/b", true},
		{"/a/b", "/a/b/", true},
		{"/a/b/c", "/a/b", true},
		{"/a/bc", "/a/b", false},
		{"/a", "/a/b", false},
		{"/w-evil/s", "/w", false},
		{"/", "/w", false},
		{"/anything", "/", true},
		{"/", "/", true},
	} {
		if got := Within(tc.p, tc.dir); got != tc.want {
			t.Errorf("Within(%q, %q) = %v, want %v", tc.p, tc.dir, got, tc.want)
		}
	}
}
