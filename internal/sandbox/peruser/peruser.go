// Package peruser holds the bounds every sandbox backend sets on what a
// sandbox may make of the kernel objects counted per host user. A
// sandbox's user namespace is made by a host user (the broker's, or host
// root under a container runtime), and the kernel charges what the sandbox
// makes of these objects to that user too, up to the user's own limits: a
// sandbox took all 128 of host root's inotify instances, queued its whole
// allowance of signals and made message queues against its 800 KiB. The
// native backend and the Podman backend set the same values, and the
// shared containment suite checks them.
package peruser

// A Count is one bound of /proc/sys/user, set in the sandbox's own user
// namespace (the knobs there are per namespace, and the kernel charges a
// namespace's objects against its parents' limits as well).
type Count struct {
	Name string // the file in /proc/sys/user
	Max  int
}

// Counts are the bounds of /proc/sys/user. No user namespaces inside
// (seccomp refuses them already); mount namespaces stay, since open_tree's
// clones, which the native init's own mounts use, count as ones.
var Counts = []Count{
	{"max_inotify_instances", 32},
	{"max_inotify_watches", 65536},
	{"max_fanotify_groups", 8},
	{"max_fanotify_marks", 8192},
	{"max_user_namespaces", 0},
}

// SigPending is RLIMIT_SIGPENDING in a sandbox: the signals its processes
// may have queued.
const SigPending = 1024

// MsgQueueBytes is RLIMIT_MSGQUEUE in a sandbox: the bytes of POSIX
// message queues its processes may make (checked against the creating
// process's own limit).
const MsgQueueBytes = 64 << 10
