package grant

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// kernelFS are the file system types that are the kernel's interfaces
// rather than files: the processes of the host (proc), its devices and
// settings (sysfs, devtmpfs, devpts, debugfs, tracefs, securityfs,
// configfs, efivarfs, pstore), its cgroups, BPF objects, namespaces,
// message queues and binary formats. /proc, /sys and /dev are never
// granted; these are refused wherever else they are mounted.
var kernelFS = map[string]bool{
	"proc": true, "sysfs": true, "devtmpfs": true, "devpts": true, "debugfs": true, "tracefs": true,
	"securityfs": true, "configfs": true, "efivarfs": true, "pstore": true, "cgroup": true, "cgroup2": true,
	"bpf": true, "nsfs": true, "mqueue": true, "binfmt_misc": true, "fusectl": true, "selinuxfs": true,
	"hugetlbfs": true, "rpc_pipefs": true, "nfsd": true,
}

// mountEntry is one line of /proc/self/mountinfo: where, what type, and
// what it shows: the directory root of the file system dev.
type mountEntry struct{ point, fstype, dev, root string }

// readMounts returns the mounts of the broker's mount namespace, which a
// sandbox's granted trees are cloned from (recursively, so with every
// mount inside them); nil where they cannot be read.
func readMounts() []mountEntry {
	mounts, _ := parseMountinfo()
	return mounts
}

// parseMountinfo reads /proc/self/mountinfo: each mount's point and type.
func parseMountinfo() ([]mountEntry, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var out []mountEntry
	for line := range bytes.SplitSeq(b, []byte("\n")) {
		// ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - TYPE SOURCE SUPER
		f := strings.Fields(string(line))
		if len(f) < 7 {
			continue
		}
		for i := 6; i+1 < len(f); i++ {
			if f[i] == "-" {
				out = append(out, mountEntry{point: unescapeMount(f[4]), fstype: f[i+1], dev: f[2], root: unescapeMount(f[3])}) // casefold_linux.go
				break
			}
		}
	}
	return out, nil
}

// kernelMount returns a mount of a kernel file system (kernelFS) that the
// resolved path p is, lies in or holds, with its type: the sandbox would
// get it with p. mounts is readMounts'.
func kernelMount(p string, mounts []mountEntry) (point, fstype string, ok bool) {
	// The mount p lies on: the last of those holding it (a later mount
	// over the same point hides an earlier one).
	holder := -1
	for i, m := range mounts {
		if within(p, m.point) {
			if holder < 0 || len(m.point) >= len(mounts[holder].point) {
				holder = i
			}
		}
	}
	if holder >= 0 && kernelFS[mounts[holder].fstype] {
		return mounts[holder].point, mounts[holder].fstype, true
	}
	for _, m := range mounts {
		if kernelFS[m.fstype] && within(m.point, p) && m.point != p {
			return m.point, m.fstype, true
		}
	}
	return "", "", false
}

// mountAliases returns the other paths by which the host's mount namespace
// shows what the resolved path p shows (as a bind mount of a directory of
// the same file system, mounted elsewhere too, does), and, for each mount
// inside p, the paths by which its directory is shown elsewhere, with
// where that mount is. mounts is readMounts'. A bind mount of / at /host
// makes /host/etc an alias of /etc, and a tree holding /host holds / too.
func mountAliases(p string, mounts []mountEntry) (self []string, held []heldMount) {
	holder := -1
	for i, m := range mounts {
		if within(p, m.point) && (holder < 0 || len(m.point) >= len(mounts[holder].point)) {
			holder = i
		}
	}
	if holder >= 0 {
		h := mounts[holder]
		self = sourceAliases(joinRel(h.root, relParts(p, h.point)), h, mounts, p)
	}
	for _, m := range mounts {
		if m.point != p && within(m.point, p) {
			for _, a := range sourceAliases(m.root, m, mounts, m.point) {
				held = append(held, heldMount{point: m.point, alias: a})
			}
		}
	}
	return self, held
}

// heldMount is a mount inside a granted tree and one path that shows the
// same directory elsewhere.
type heldMount struct{ point, alias string }

// sourceAliases returns where the other mounts of x's file system show
// its directory src, but at: each mount of the same device whose root
// holds src.
func sourceAliases(src string, x mountEntry, mounts []mountEntry, at string) []string {
	var out []string
	for _, y := range mounts {
		if y.dev != x.dev || y.point == x.point || !within(src, y.root) {
			continue
		}
		if a := joinRel(y.point, relParts(src, y.root)); a != at && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// joinRel is base with the components rel below it.
func joinRel(base string, rel []string) string {
	return filepath.Join(append([]string{base}, rel...)...)
}
