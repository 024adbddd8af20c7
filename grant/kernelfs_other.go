//go:build !linux

package grant

// mountEntry is a mount; only Linux lists them (kernelfs_linux.go).
type mountEntry struct{ point, fstype, dev, root string }

// readMounts: the kernel file systems a grant refuses are Linux's.
func readMounts() []mountEntry { return nil }

// kernelMount: nothing is refused for its mounts outside Linux.
func kernelMount(string, []mountEntry) (point, fstype string, ok bool) { return "", "", false }

// heldMount is a mount inside a granted tree shown elsewhere too.
type heldMount struct{ point, alias string }

// mountAliases: only Linux lists mounts.
func mountAliases(string, []mountEntry) (self []string, held []heldMount) { return nil, nil }
