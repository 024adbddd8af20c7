// Package linux is the host side of the native Linux sandbox backend. For
// each call it starts the airlock binary (from a sealed memfd copy) in its
// hidden init mode inside fresh user, mount, PID, network, IPC, UTS and
// cgroup namespaces, places it in per-call cgroups, sends it the
// configuration, relays its streams under the output cap, enforces the wall
// time, and tears everything down. The in-sandbox side is package inside;
// the protocol between them is drawn in package initproto.
//
// Decisions, and why:
//
//   - Inside, uid and gid 0 map to the broker's own uid and gid (one-entry
//     maps, setgroups denied), so the same code runs as root and
//     unprivileged, and files written to writable grants belong to the
//     user. When the broker is root the sandbox's uid 0 is host uid 0
//     without capabilities; that is why /proc/sys, /proc/sysrq-trigger,
//     /proc/irq, /proc/bus and /proc/fs are re-mounted read-only and
//     /proc/kcore, /proc/keys, /proc/timer_list and /proc/sched_debug are
//     masked, and why RLIMIT_NPROC (ignored for host root) is backed by
//     pids.max.
//   - Cgroups: v2 when the broker's cgroup has memory and pids delegated,
//     else v1 memory+pids. Without either, CgroupsDefault refuses to run as
//     root (root can always create cgroups, so their absence is a fault)
//     and runs unprivileged brokers without them, listing "cgroups" under
//     Result.Isolation.Missing; CgroupsRequired always fails closed with a
//     MissingFeatureError. Memory is then bounded by RLIMIT_AS alone.
//   - RLIMIT_AS is max(4 x memory limit, 8 GiB): Go, the JVM and V8 reserve
//     far more address space than they touch, so a tight RLIMIT_AS breaks
//     them; the memory cgroup is the real bound.
//   - The sandbox cgroup namespace is rooted at the broker's cgroup (the
//     init is moved into its own cgroup after clone, v1 has no
//     CLONE_INTO_CGROUP). No cgroupfs is mounted inside, so this only shows
//     in /proc/self/cgroup as "/airlock-<pid>-<n>".
//   - Protected (ReadOnly) paths that do not exist get a placeholder
//     directory in the writable grant with an empty read-only tmpfs on it,
//     so nothing of that name can be created; the host removes the
//     placeholder afterwards (through os.Root) if it is still empty.
//   - A terminal (Spec.TTY) is a pty allocated here; the sandbox gets the
//     slave as fds 0-2 and its controlling terminal, and sees it as
//     /dev/pts/0 and /dev/console. Size changes arrive through WithResize.
//   - The egress proxy socket is bound read-only at /run/airlock/proxy.sock
//     and, with a ProxyPort, the init forwards 127.0.0.1:ProxyPort to it.
//   - The init keeps, besides fds 0-2, the status pipe (command mode, to
//     report how the payload ended) and the Go runtime's epoll, eventfd and
//     a pidfd of the payload, all close-on-exec; it is non-dumpable, so the
//     payload cannot open them through /proc/1/fd.
//   - The init runs with GOMAXPROCS=1 and GODEBUG=containermaxprocs=0 so
//     its runtime holds no host cgroup files and has few threads for the
//     all-threads credential changes.
//   - Pdeathsig ties the init to the thread that started it; Go only ends
//     threads whose goroutine exits while locked, so a caller must not call
//     Run from a goroutine that locks its OS thread and exits.
package linux
