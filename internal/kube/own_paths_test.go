package kube

import (
	"context"
	"testing"

	"github.com/airlockhq/airlock/internal/kube/kubereq"
)

// TestGrantedPathNeverCoversThePodsOwn: each granted path is a volume the
// pod mounts at that path, the first the session's workspace claim, which
// outlives the pod. A granted path over the directory of the pod's own
// command (/usr/local/bin/airlock, the tool-server, which runs outside the
// native sandbox with the session's Secret and the pod's network) let a
// call write its own program there, and the session's next pod run it as
// the tool-server: the pod's NetworkPolicy (every public address on the
// grant's ports), not the egress proxy's host names, then bounded it, and
// nothing of the native sandbox did. The kernel's own trees (/proc, /sys,
// /dev) are the runtime's, not a volume's. Each is refused, by the
// helper's request and by Acquire, before anything is made.
func TestGrantedPathNeverCoversThePodsOwn(t *testing.T) {
	c := newCluster(t, false)
	for _, p := range []string{
		"/usr/local/bin", "/usr/local", "/usr", "/usr/local/bin/airlock",
		"/proc", "/proc/sys", "/sys", "/sys/fs/cgroup", "/dev", "/dev/shm",
	} {
		mounts := []kubereq.Mount{{Path: p, Writable: true}}
		r := kubereq.Request{Target: "kube://" + testNS + "/hands", Session: "0123456789ab", Mounts: mounts, WorkspaceSize: "1Gi"}
		if _, err := kubereq.Decode(r.Encode()); err == nil {
			t.Errorf("path %s: the helper's request was accepted, want it refused (the pod's own)", p)
		}
		s, err := c.acquireWith(ModePods, func(r *kubereq.Request) { r.Mounts, r.WorkspaceSize = mounts, "1Gi" })
		if err == nil {
			for _, v := range PodSpec(&s.hands).Containers[0].VolumeMounts {
				if v.MountPath == p {
					t.Logf("path %s: the pod mounts volume %s there (writable %v)", p, v.Name, !v.ReadOnly)
				}
			}
			_ = s.Release(context.Background())
			t.Errorf("path %s: the session was acquired, want it refused (the pod's own)", p)
			continue
		}
		if l := left(t, c, ""); len(l) != 0 {
			t.Errorf("path %s: the refused session left %v", p, l)
		}
	}
}
