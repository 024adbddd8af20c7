package kubereq

import (
	"strings"
	"testing"
)

// TestDecodeRefusesHostile: a request that is not exactly one well-formed
// object, or names a path, host, limit, class or size the hands' pod could
// not be made of safely, is refused naming what is wrong, before the
// helper makes any API call.
func TestDecodeRefusesHostile(t *testing.T) {
	good := Request{Target: "kube://agents/hands", Session: "0123456789ab", Mounts: []Mount{{Path: "/work", Writable: true}},
		Hosts: []string{"example.com"}, Memory: 1 << 30, Tmp: 1 << 20, FileSize: 1 << 20}
	if _, err := Decode(good.Encode()); err != nil {
		t.Fatalf("the good request: %v", err)
	}
	edit := func(f func(*Request)) string {
		r := good
		r.Mounts = append([]Mount(nil), good.Mounts...)
		f(&r)
		return r.Encode()
	}
	for _, tc := range []struct {
		name, raw, want string
	}{
		{"trailing object", good.Encode() + `{"target":"kube://other/hands"}`, "more than one"},
		{"trailing junk", good.Encode() + ` x`, "more than one"},
		{"huge", edit(func(r *Request) { r.Hosts = []string{strings.Repeat("a", 70000) + ".com"} }), "bytes"},
		{"unknown field", strings.Replace(good.Encode(), `{`, `{"token":"x",`, 1), "unknown field"},
		{"relative path", edit(func(r *Request) { r.Mounts[0].Path = "work" }), "absolute"},
		{"dot-dot path", edit(func(r *Request) { r.Mounts[0].Path = "/work/../etc" }), "clean"},
		{"trailing slash", edit(func(r *Request) { r.Mounts[0].Path = "/work/" }), "clean"},
		{"newline in path", edit(func(r *Request) { r.Mounts[0].Path = "/work\n--rw /" }), "control"},
		{"root", edit(func(r *Request) { r.Mounts[0].Path = "/" }), "the pod's"},
		{"secret dir", edit(func(r *Request) { r.Mounts[0].Path = "/run/airlock" }), "the pod's"},
		{"under the secret dir", edit(func(r *Request) { r.Mounts[0].Path = "/run/airlock/x" }), "the pod's"},
		{"above the secret dir", edit(func(r *Request) { r.Mounts[0].Path = "/run" }), "the pod's"},
		{"tmp", edit(func(r *Request) { r.Mounts[0].Path = "/tmp" }), "the pod's"},
		{"duplicate path", edit(func(r *Request) { r.Mounts = append(r.Mounts, Mount{Path: "/work"}) }), "twice"},
		{"bad host", edit(func(r *Request) { r.Hosts = []string{"exa mple.com"} }), "network.hosts"},
		{"flag as host", edit(func(r *Request) { r.Hosts = []string{"--allow-unenforced-limits"} }), "network.hosts"},
		{"negative memory", edit(func(r *Request) { r.Memory = -1 }), "memory"},
		{"negative tmp", edit(func(r *Request) { r.Tmp = -1 }), "tmp"},
		{"negative file size", edit(func(r *Request) { r.FileSize = -1 }), "file_size"},
		{"runtime class", edit(func(r *Request) { r.RuntimeClass = "gVisor\n" }), "runtime_class"},
		{"workspace size", edit(func(r *Request) { r.WorkspaceSize = "10 Gi; rm" }), "workspace_size"},
		{"negative workspace", edit(func(r *Request) { r.WorkspaceSize = "-1Gi" }), "workspace_size"},
		{"workspace class", edit(func(r *Request) { r.WorkspaceSize, r.WorkspaceClass = "1Gi", "Fast/../x" }), "workspace_class"},
		{"class without size", edit(func(r *Request) { r.WorkspaceClass = "fast" }), "workspace_class"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Decode(tc.raw)
			if err == nil {
				t.Fatalf("Decode accepted %.200q", tc.raw)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Decode: %v; want it to say %q", err, tc.want)
			}
			if len(err.Error()) > 600 {
				t.Fatalf("the error is %d bytes long: it should name what is wrong, not repeat the request", len(err.Error()))
			}
		})
	}
	for _, ok := range []string{
		edit(func(r *Request) { r.Mounts[0].Path = "/tmp/work" }),
		edit(func(r *Request) { r.Mounts[0].Path = "/runner/work" }),
		edit(func(r *Request) { r.WorkspaceSize, r.WorkspaceClass = "10Gi", "fast-ssd.example.com" }),
		edit(func(r *Request) { r.WorkspaceSize = "1.5G" }),
		edit(func(r *Request) { r.RuntimeClass = "gvisor" }),
		edit(func(r *Request) { r.Hosts = []string{"*.example.com", "api.example.com:8443", "[2001:db8::1]:443"} }),
	} {
		if _, err := Decode(ok); err != nil {
			t.Errorf("Decode(%s): %v", ok, err)
		}
	}
}
