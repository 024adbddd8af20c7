// Package linux is the host side of the native Linux sandbox backend. For
// each call it starts the airlock binary (sealed: exe_linux.go) in its
// hidden init mode inside fresh user, mount, PID, network, IPC, UTS and
// cgroup namespaces, places it in per-call cgroups (on cgroup v1 it has
// the init join them as it starts: initproto.JoinFD), sends it the
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
//     without capabilities, the owner of the host's device nodes and of
//     the kernel's entries in every /proc; that is why /proc is mounted
//     read-only (its knobs in sys, sysrq-trigger, irq, bus and fs, and the
//     modes of its entries, one object for every /proc, which a chmod
//     changed until a reboot) and so are the nodes in /dev (a chmod of
//     /dev/null changed the host's), why /proc/kcore, /proc/keys,
//     /proc/timer_list, /proc/sched_debug and every file at the top of
//     /proc only root may read (kpageflags, slabinfo, vmallocinfo, kmsg,
//     ...) are masked, why what only its owner and group may read in the
//     /etc entries bound in (the host's TLS keys in /etc/ssl/private) is
//     masked too (the sandbox also keeps the broker's groups), and why
//     RLIMIT_NPROC
//     (ignored for host root) is backed by pids.max. Kernel objects
//     counted per user are bounded in the sandbox's own user namespace
//     (/proc/sys/user: inotify, fanotify, user namespaces) and by
//     RLIMIT_SIGPENDING, so a sandbox cannot use up the broker's host
//     user's allowance; these bounds are shares of half the user's own
//     limits, which the sandboxes alive in one broker process divide
//     (usercounts_linux.go: each new one gets its bound or half of what is
//     left, so parallel and background calls together cannot use the
//     user's up either). Processes too, for a broker that is not host
//     root: the kernel counts a sandbox's processes against the RLIMIT_NPROC
//     the user had when it made the sandbox's user namespace, so sandboxes
//     of the default 256 left a user whose limit was 600 no process to
//     fork, and the broker no thread (its runtime aborted); a sandbox's
//     RLIMIT_NPROC is its process limit or, when less is left, its share
//     (never below the init's own threads, initThreads), which a command
//     meets as EAGAIN without the pids cgroup reporting it. Locked shared
//     memory (SHM_LOCK) the same way, by RLIMIT_MEMLOCK: a sandbox that
//     kept the user's 8 MiB locked it all, and the user's own processes
//     could lock none;
//     io_setup is refused (kernel AIO is one pool for the machine). Epoll
//     watches are counted per host user with no per-namespace bound; their
//     memory is the sandbox's, but the kernel sizes
//     fs.epoll.max_user_watches at 4% of the RAM, so a memory limit above
//     about 5% of it (the default 1 GiB on a host of 20 GB or less) does
//     not keep a sandbox from using up the host user's watches while it
//     runs (the README says so); only a host user of its own would. Open
//     files are counted for the whole host (fs.file-max, one per 10 KiB of
//     RAM) and a mapped file stays open once its descriptor is closed, so
//     RLIMIT_NOFILE does not bound them either: at about 570 bytes each,
//     the memory limit does only when it is small against the RAM (the
//     README says so too).
//   - Cgroups: v2 when the broker's cgroup has memory and pids delegated,
//     else v1 memory+pids where the broker may write both. On v2 the
//     broker enables the two controllers for its cgroup's children; since a
//     v2 cgroup that holds processes cannot do that, a broker alone in its
//     cgroup (a scope made for it: systemd-run --user --scope -p
//     Delegate=yes) first moves itself into the leaf "airlock-broker", and
//     sandbox cgroups are its siblings. Without cgroups, CgroupsDefault
//     makes New fail as root (root can always create cgroups, so their
//     absence is a fault), CgroupsRequired always; otherwise New succeeds
//     but every Run is refused with a MissingFeatureError that names the
//     memory and process limits and how to delegate a cgroup: every Spec
//     has both limits (zero means the default), and a limit that silently
//     does not hold is what fail-closed rules out. Limits.AllowUnenforced
//     runs it anyway, with "cgroups" under Result.Isolation.Missing and
//     "memory" and "processes" under Isolation.Unenforced; memory is then
//     bounded by RLIMIT_AS alone (4x the limit, at least 8 GiB: no bound
//     in practice), processes by RLIMIT_NPROC (ignored for a root broker),
//     which Linux 5.14+ counts per user namespace (so per sandbox), but a
//     hit cannot be reported.
//   - Limits hit: after each run the cgroup's counters name every limit
//     that bit (Result.LimitsHit): v1 memory.oom_control oom_kill, v2
//     memory.events oom_kill and oom (reclaim at the limit, v2 "max" or v1
//     memory.failcnt, is normal page-cache pressure and is not counted),
//     and pids.events max on both; "time" and "output" when the backend
//     killed the sandbox for them. Result.Limit is the one that ended the
//     run: time or output when killed for it, else memory or processes if
//     hit by a payload that did not finish normally.
//   - The wall time: the host kills the init (SIGKILL, ending the PID
//     namespace) at the deadline, and the init, which gets the deadline in
//     its config or claim, ends the sandbox itself shortly after should
//     the host not have: a broker stopped by job control runs no timer
//     (initproto.Config.Deadline).
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
//     /dev/pts/0 and /dev/console. Size changes arrive on Spec.Resize.
//   - The egress proxy socket is bound read-only at /run/airlock/proxy.sock
//     and, with a ProxyPort, the init hands each connection to
//     127.0.0.1:ProxyPort over to it (package egress/forward).
//   - The init keeps, besides fds 0-2, the status pipe (command mode, to
//     report how the payload ended) and the Go runtime's epoll, eventfd and
//     a pidfd of the payload, all close-on-exec; it is non-dumpable, so the
//     payload cannot open them through /proc/1/fd.
//   - The init runs with GOMAXPROCS=1 and GODEBUG=containermaxprocs=0 so
//     its runtime holds no host cgroup files and has few threads for the
//     all-threads credential changes.
//   - The init is spawned, not forked (spawn_cgo_linux.go, a cgo build on
//     amd64): clone3 with CLONE_VM|CLONE_VFORK|CLONE_CLEAR_SIGHAND, the
//     child on a C stack of its own, writing its own one-entry id maps
//     (setgroups denied first, as any process may for itself) before it
//     execs, so the broker's page tables are never copied. Elsewhere, or
//     where the kernel refuses the clone, os.StartProcess forks it and
//     writes the maps from the parent; the two start the same init
//     (TestSpawnedInitAsForked).
//   - Pdeathsig ties the init to the thread that started it; Go only ends
//     threads whose goroutine exits while locked, so a caller must not call
//     Run from a goroutine that locks its OS thread and exits. The init asks
//     for it itself (PR_SET_PDEATHSIG first thing in inside.Main), not
//     through SysProcAttr.Pdeathsig: Go's child then compares getppid(),
//     0 in a new PID namespace, with the parent's pid and kills itself,
//     which Linux ignores (the init of a namespace) and gVisor does not. A
//     broker that dies before the prctl leaves the init no config to read,
//     or no reader for its first status.
//   - Setup steps a container runtime refuses (EPERM) come back as
//     MissingFeatureErrors saying why and how to fix it (refused_linux.go):
//     a fresh /proc where runc masks parts of the container's, sethostname
//     under a seccomp profile that allows it only with CAP_SYS_ADMIN, a /
//     outside a mount namespace of the sandbox's own. A host whose report
//     lacks a required feature (a namespace, openat2) has every Run refused
//     at once, naming all of them.
//   - Warm pool (pool_linux.go, off unless Options.PoolSize or a
//     Backend.Pool holder asks): tool-mode sandboxes (no Command, no TTY,
//     no egress proxy, whose socket is per call) are built ahead for a
//     spec's shape (mounts, masks, protected paths, env, cwd, rlimits,
//     cgroup limits; the wall time and output cap are applied when taken)
//     up to Staged: grant mounts, /dev, /proc, pivot, bounding set and
//     no_new_privs done, its Landlock ruleset made (see earlyLandlock in
//     package inside), the runtime's signal threads and the tool's JSON
//     paths warmed, its init waiting for the Claim (initproto); one whose
//     every mount is read-only (a tool that changes nothing) waits
//     protected and locked down already, and its claim only lists the
//     placeholders other calls hold. A Run that finds none ready while
//     one is being built waits for it (maxBuildWait). Each is
//     taken by exactly one Run, which makes the placeholders (the files'
//     inodes made unnamed while it was built: spare_linux.go), writes the
//     call's input (when in memory and small enough for the pipe) and the
//     Claim, waits for Ready, starts the wall-time clock then, relays,
//     classifies and destroys it as a cold run does; the pool refills in
//     the background. Only one grant's shapes are kept (another grant
//     drains them; at most four shapes, least recently used out). A warm
//     sandbox holds its cgroup, and no placeholder, while it waits, dies
//     with the broker (Pdeathsig, PID 1 of its namespace) and its cgroup
//     is swept like any other. Because its mounts were made when it was
//     built, the host paths behind its mounts, masks and protected paths
//     are compared (lstat: existence, device, inode, type) when it is
//     taken; a masked file created or replaced since, or a granted
//     directory swapped, discards it and the call runs cold.
//   - In tool mode the init reports the tool's exit code on the status
//     pipe after killing every other process of the sandbox and closing
//     its standard streams; the call is answered then, and the reaping of
//     the init, the kernel's namespace teardown and the cgroup removal
//     continue in the background (Close and Pool's release wait for them).
package linux
