// Package seccomp builds and installs the seccomp-BPF filter of airlock's
// Linux sandbox. It is pure Go: no cgo, no libseccomp. [Build] makes the
// filter as data for x86_64 or aarch64 on any host, from syscall tables
// generated out of golang.org/x/sys (gen_tables.go); [Install] (Linux only)
// puts it on every thread of the in-sandbox init after its mounts are set up
// and before the payload runs.
//
// The filter is a deny list: a syscall it does not name is allowed. The
// namespaces, mounts, Landlock rules and dropped capabilities are the
// sandbox's walls; the filter removes the kernel surfaces that have been used
// to climb them.
//
// It first kills the process for a foreign architecture (an i386 syscall
// made with int 0x80, whose numbers the deny list would not match) and, on
// x86_64, answers every x32 syscall (bit 0x40000000) with ENOSYS, as a kernel
// built without x32 does. It answers clone3 with ENOSYS, so libc falls back
// to clone, whose flags a filter can read (clone3 keeps them behind a
// pointer). It refuses with EPERM, one group a line:
//
//   - ptrace, process_vm_readv/writev, pidfd_getfd, kcmp: reading or
//     steering another process (PID 1 and the helpers included).
//   - mount, umount2, pivot_root, chroot and the new mount API (fsopen,
//     fsconfig, fsmount, fspick, move_mount, open_tree, open_tree_attr,
//     mount_setattr): the mount tree is built once, by the init.
//   - unshare, setns, and clone with any CLONE_NEW* flag: nested namespaces
//     expose root-only kernel code to an unprivileged user (CVE-2022-0185).
//   - keyctl, add_key, request_key: keyrings are not namespaced.
//   - bpf, perf_event_open, io_uring_*, userfaultfd: large attack surfaces;
//     io_uring also runs operations the filter never sees.
//   - kexec_*, init_module, finit_module, delete_module: loading code into
//     the kernel.
//   - open_by_handle_at, name_to_handle_at: file handles walk past the mount
//     tree (the 2014 "shocker" escape).
//   - iopl, ioperm, swapon/off, syslog, acct, reboot, vhangup, quotactl,
//     quotactl_fd, nfsservctl: hardware and whole-machine administration.
//   - modify_ldt, lookup_dcookie, uselib, ustat, sysfs, _sysctl: obsolete
//     interfaces with a history of bugs.
//   - io_setup: kernel AIO's events come from one pool for the whole
//     machine (fs.aio-max-nr); a sandbox that fills it fails io_setup for
//     every process on the host.
//   - settimeofday, clock_settime, clock_adjtime, adjtimex: the clock is the
//     host's.
//   - personality with any argument but 0 (PER_LINUX) or 0xffffffff (a
//     query): ADDR_NO_RANDOMIZE and friends switch off exploit mitigations.
//   - ioctl TIOCSTI and TIOCLINUX: injecting input into a terminal
//     (CVE-2017-5226); and TIOCSETD: a line discipline is a kernel driver
//     of its own behind the terminal (n_hdlc, n_gsm: CVE-2017-2636,
//     CVE-2023-6546), loaded on demand.
//   - ioctl FS_IOC_SETFLAGS (chattr): among the inode flags, the casefold
//     attribute of a directory, where names fold case while the scans for
//     protected names compare bytes.
//   - ioctl BTRFS_IOC_SNAP_CREATE and its _V2 form: a snapshot copies a
//     whole subvolume as it is on disk, the paths the sandbox has masked
//     included, and btrfs asks only that the caller own it, as the
//     sandbox's user owns its granted trees.
//   - setrlimit and prlimit64 of RLIMIT_CORE: answered as done (errno 0)
//     and not made, or with EPERM when prlimit64 also asks for the old
//     value. The init sets the limit to 1, the one value at which the
//     kernel pipes no core to a core_pattern helper (systemd-coredump,
//     apport), which it would otherwise run as root on the host for each
//     crash in the sandbox.
//   - fcntl F_SETLEASE and F_SETDELEG: a lease on a host file the sandbox
//     can only read (ld.so.cache, a read-only grant) makes every open of
//     it on the host wait up to fs.lease-break-time (45 s), again and
//     again.
//
// It refuses with EPERM every call that would give a file the set-user-ID or
// set-group-ID bit: chmod, fchmod, fchmodat, fchmodat2, creat, mknod and
// mknodat with either bit in the mode, and open and openat with either bit
// when they create (O_CREAT or O_TMPFILE). A sandbox's files are the host's,
// owned there by its user (host root under a root broker), and nosuid holds
// only inside the sandbox, so such a file would run as that user for
// whoever executes it on the host. openat2 keeps its mode behind a pointer,
// so it is answered ENOSYS, as a kernel without it would; libc and Go fall
// back to openat.
//
// It answers EOPNOTSUPP, as a file system without them would, to fallocate
// with FALLOC_FL_KEEP_SIZE or FALLOC_FL_INSERT_RANGE (unless it punches a
// hole) and to the preallocation ioctls FS_IOC_RESVSP, FS_IOC_RESVSP64 and
// FS_IOC_ZERO_RANGE, which the VFS turns into fallocate with
// FALLOC_FL_KEEP_SIZE for any regular file: allocating past the end without
// growing the file meets no RLIMIT_FSIZE, so one call would take any amount
// of the host's disk through a read-write grant. It answers EOPNOTSUPP too,
// as a file system without encryption would, to the fscrypt ioctls that
// add or remove a key or set a policy (FS_IOC_ADD_ENCRYPTION_KEY,
// FS_IOC_REMOVE_ENCRYPTION_KEY and its ALL_USERS form,
// FS_IOC_SET_ENCRYPTION_POLICY): a file system's keys are kernel keys no
// namespace holds, charged to the host user's key quota and kept until
// it is unmounted, and removing the key the host user added locks their
// encrypted directory.
//
// It answers ENOMEM, as a host with an empty huge page pool does, to mmap
// with MAP_HUGETLB, memfd_create with MFD_HUGETLB and shmget with
// SHM_HUGETLB: the host's pool (vm.nr_hugepages and its surplus) is
// charged to no memory cgroup, so a sandbox took every huge page the host
// kept for its databases or VMs, past its own memory limit. Programs that
// try huge pages first fall back on ENOMEM; transparent huge pages, from
// the ordinary allocator and charged as any page, pass.
//
// It refuses socket and socketpair for any family but AF_UNIX, AF_INET and
// AF_INET6 with EAFNOSUPPORT rather than EPERM: that is the answer of a
// kernel built without the family, which programs already treat as "not
// available" (glibc's getaddrinfo carries on when netlink is missing)
// instead of failing hard. Netlink, packet, vsock and the rest are kernel
// surfaces a tool never needs. [Options] can refuse AF_UNIX too. In
// AF_INET and AF_INET6 it allows only the protocols built in with IP (the
// default, ICMP and ICMPv6 for ping sockets, TCP, UDP, MPTCP) and answers
// any other EPROTONOSUPPORT: asked for SCTP, DCCP, L2TP and the like, the
// kernel loads their module, as root, where modules load on demand.
//
// Arguments are compared on their low 32 bits, which is all the kernel reads
// of a clone flag word, a personality, an ioctl request, a socket family, an
// open flag word or a mode,
// so setting high bits cannot slip a call past a comparison.
//
// Syscalls an architecture lacks (aarch64 has no iopl, ioperm, modify_ldt,
// uselib, ustat, sysfs or _sysctl) are left out of its filter; [Denied]
// lists what each architecture's filter may refuse, for docs and
// airlock doctor.
package seccomp

//go:generate go run gen_tables.go
