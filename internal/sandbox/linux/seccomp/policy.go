package seccomp

import "fmt"

// denyAlways lists the syscalls refused with EPERM whatever their arguments,
// grouped as in the package comment. A name missing from an architecture's
// table (aarch64 has no iopl, for example) is skipped for that architecture;
// TestPolicyNamesExist checks each name exists somewhere, so a typo cannot
// hide.
var denyAlways = []string{
	// Inspecting or writing another process.
	"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp",
	// Changing the mount tree or the root.
	"mount", "umount2", "pivot_root", "chroot",
	"fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "open_tree_attr", "mount_setattr",
	// Entering or making namespaces (clone is checked by flag, clone3 gets ENOSYS).
	"unshare", "setns",
	// Kernel keyrings.
	"keyctl", "add_key", "request_key",
	// Large kernel attack surfaces.
	"bpf", "perf_event_open", "io_uring_setup", "io_uring_enter", "io_uring_register", "userfaultfd",
	// Loading kernels and modules.
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
	// Opening files by handle, which walks past the mount tree (the "shocker" escape).
	"open_by_handle_at", "name_to_handle_at",
	// Hardware and whole-machine administration.
	"iopl", "ioperm", "swapon", "swapoff", "syslog", "acct", "reboot", "vhangup",
	"quotactl", "quotactl_fd", "nfsservctl",
	// Obsolete interfaces with a history of bugs.
	"modify_ldt", "lookup_dcookie", "uselib", "ustat", "sysfs", "_sysctl",
	// Kernel AIO: its events come from one pool for the whole machine
	// (fs.aio-max-nr), which a sandbox could fill for every process.
	"io_setup",
	// Setting the clocks.
	"settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
}

// Syscalls the filter inspects the arguments of, or answers specially.
const (
	sysClone       = "clone"
	sysClone3      = "clone3"
	sysPersonality = "personality"
	sysIoctl       = "ioctl"
	sysSocket      = "socket"
	sysSocketpair  = "socketpair"
	sysOpenat2     = "openat2"
	sysFallocate   = "fallocate"
	sysFcntl       = "fcntl"
	sysSetrlimit   = "setrlimit"
	sysPrlimit64   = "prlimit64"
	sysMmap        = "mmap"
	sysMemfdCreate = "memfd_create"
	sysShmget      = "shmget"
)

// Huge pages from the host's pool (vm.nr_hugepages, and the surplus
// vm.nr_overcommit_hugepages allows) are charged to no memory cgroup, so
// a sandbox that mapped them was bounded by the pool alone: it took every
// huge page the host keeps for its databases, DPDK or VMs, past its own
// memory limit, for as long as it lived. mmap(2) with MAP_HUGETLB (in its
// flags, args[3]), memfd_create(2) with MFD_HUGETLB (args[1]) and
// shmget(2) with SHM_HUGETLB (args[2]; the default vm.hugetlb_shm_group,
// gid 0, lets a root broker's sandbox use it) are answered ENOMEM, as a
// host with an empty pool answers them, which is what programs that try
// huge pages first (PostgreSQL's huge_pages=try, a JVM's large pages)
// fall back on. Each flag lies in the low 32 bits, all the kernel reads
// of memfd_create's and shmget's flags, and the only bits of mmap's that
// can ask for huge pages. Transparent huge pages (madvise) come from the
// ordinary allocator, charged as any page, and pass.
const (
	mapHugetlb = 0x40000 // MAP_HUGETLB
	mfdHugetlb = 0x4     // MFD_HUGETLB
	shmHugetlb = 0o4000  // SHM_HUGETLB
)

// rlimitCore is RLIMIT_CORE (the same on x86_64 and aarch64). The init
// sets it to 1 (inside.coreLimit) and the filter keeps it there: with
// core_pattern a pipe (systemd-coredump, apport) the kernel runs that
// helper as root on the host for each crash, whatever the limit, unless
// the limit is exactly 1; with a file pattern, a limit below a page
// writes no core either.
const rlimitCore = 4

// fallocate(2) modes. FALLOC_FL_KEEP_SIZE allocates blocks past the end of
// the file without changing its size, and FALLOC_FL_INSERT_RANGE grows it
// from the middle; neither meets RLIMIT_FSIZE, so one call would take any
// amount of the host's disk past limits.file_size. The filter answers them
// EOPNOTSUPP, as a file system without them would (posix_fallocate and
// most programs then write instead, which the limit meets), unless
// FALLOC_FL_PUNCH_HOLE, which frees blocks, is set.
const (
	fallocKeepSize    = 0x01
	fallocPunchHole   = 0x02
	fallocInsertRange = 0x20
)

// A modeCheck names a syscall that sets a file's mode bits and which of its
// arguments hold the mode and, for the open family, the open flags (-1:
// none, the mode always counts).
type modeCheck struct {
	name        string
	mode, flags int
}

// label names the filter's check of m's arguments; calls whose arguments
// sit alike share one.
func (m modeCheck) label() string { return fmt.Sprintf("mode%d.%d", m.mode, m.flags) }

// modeChecks are the syscalls that can give a file the set-user-ID or
// set-group-ID bit: a sandbox's files are the host's, so such a file
// made in a read-write tree would run as the broker's user (host root under
// a root broker) for whoever executes it on the host, where nosuid does not
// hold. openat2 keeps its mode behind a pointer, so the filter answers it
// ENOSYS as a kernel without it would, and libc and Go use openat.
// x86_64 alone has chmod, creat, mknod and open; aarch64 has only the *at
// forms.
var modeChecks = []modeCheck{
	{"chmod", 1, -1}, {"fchmod", 1, -1}, {"creat", 1, -1}, {"mknod", 1, -1},
	{"fchmodat", 2, -1}, {"fchmodat2", 2, -1}, {"mknodat", 2, -1},
	{"open", 2, 1}, {"openat", 3, 2},
}

// setIDBits are S_ISUID and S_ISGID.
const setIDBits = 0o4000 | 0o2000

// createFlags are the open flags that make open and openat read their
// mode: O_CREAT and __O_TMPFILE (part of O_TMPFILE), the same on x86_64 and
// aarch64.
const createFlags = 0o100 | 0o20000000

// cloneNamespaceFlags is every CLONE_NEW* bit: CLONE_NEWNS, CLONE_NEWCGROUP,
// CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET and
// CLONE_NEWTIME. All lie in the low 32 bits, the only ones clone(2) reads.
// CLONE_NEWTIME (0x80) overlaps the exit-signal byte of clone(2), where the
// kernel cannot accept it, but no signal number has that bit either, so
// refusing it costs nothing.
const cloneNamespaceFlags = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 |
	0x10000000 | 0x20000000 | 0x40000000 | 0x00000080

// personalityQuery and personalityLinux are the only personality(2)
// arguments allowed: 0xffffffff reads the persona without changing it, and
// PER_LINUX (0) is the default persona.
const (
	personalityLinux = 0
	personalityQuery = 0xffffffff
)

// Terminal ioctls: TIOCSTI pushes bytes into the terminal's input queue
// (CVE-2017-5226), TIOCLINUX can paste the console selection, and TIOCSETD
// changes the terminal's line discipline, each a kernel driver of its own
// (n_hdlc, n_gsm, slip, ppp, ...) with a history of privilege escalations
// (CVE-2017-2636, CVE-2023-6546), whose module the kernel loads on demand
// where dev.tty.ldisc_autoload allows it. A sandbox with a terminal
// (airlock exec from one) has its own pseudo-terminal; no tool needs another
// line discipline on it.
const (
	ioctlTIOCSTI   = 0x5412
	ioctlTIOCLINUX = 0x541c
	ioctlTIOCSETD  = 0x5423
)

// fcntl(2) commands that put a lease (F_SETLEASE) or a delegation
// (F_SETDELEG, Linux 6.19) on a file. A lease needs only a descriptor open
// for reading and a file owned by the caller's fsuid, which a sandbox's is
// for the host's files under a root broker (/etc/ld.so.cache, /usr, the
// read-only grants) and for the broker user's files otherwise. While a
// sandbox holds a write lease, every open of the file on the host (an
// exec that maps ld.so.cache, an editor, the broker) waits for the lease
// to break, up to fs.lease-break-time (45 s), or fails with EWOULDBLOCK,
// and the sandbox may take the lease again at once; a read lease does the
// same to every open for writing. The filter refuses both commands, as the
// kernel does a caller without CAP_LEASE on a file it does not own.
const (
	fcntlSetLease = 1024      // F_LINUX_SPECIFIC_BASE + 0
	fcntlSetDeleg = 1024 + 16 // F_LINUX_SPECIFIC_BASE + 16
)

// FS_IOC_SETFLAGS (and its 32-bit form) sets a file's inode flags, among
// them the casefold attribute of an empty directory a sandbox made (ext4,
// f2fs, tmpfs with casefold). Names in such a directory fold case, where
// the scans for protected names (.git, nested repositories) compare bytes:
// a .GIT made there would be missed by the next session's scan while git
// finds it. The other flags need capabilities the sandbox lacks or are
// hints (noatime, nodump, compression), so the request is refused whole.
const (
	ioctlFSSetflags   = 0x40086602
	ioctlFSSetflags32 = 0x40046602
)

// The preallocation ioctls that predate fallocate(2), from XFS, which the
// VFS answers for every regular file (ioctl_preallocate): FS_IOC_RESVSP and
// FS_IOC_RESVSP64 are fallocate with FALLOC_FL_KEEP_SIZE, FS_IOC_ZERO_RANGE
// with FALLOC_FL_ZERO_RANGE | FALLOC_FL_KEEP_SIZE. Like those modes of
// fallocate they allocate past the end of a file without growing it, which
// RLIMIT_FSIZE never meets, so they are answered EOPNOTSUPP too, as the
// kernel does on a file system without fallocate. FS_IOC_UNRESVSP and
// FS_IOC_UNRESVSP64 punch a hole, which frees blocks, and pass. (struct
// space_resv is 48 bytes on x86_64 and aarch64 alike; the 32-bit forms are
// reachable only from the compat ABIs, which the filter refuses.)
const (
	ioctlFSResvsp    = 0x40305828 // _IOW('X', 40, struct space_resv)
	ioctlFSResvsp64  = 0x4030582a // _IOW('X', 42, struct space_resv)
	ioctlFSZeroRange = 0x40305839 // _IOW('X', 57, struct space_resv)
)

// The file-system encryption (fscrypt) ioctls that change keys or
// policies. A file system's encryption keys are kernel keys as keyctl's
// are: held by the file system, not by any namespace, charged to the
// user's key quota (200 keys for a user other than root), and kept until
// the file system is unmounted. A sandbox with a grant on a file system
// with encryption (ext4 or f2fs made with it, as ChromeOS and Android do
// and fscrypt(1) sets up) could add keys that outlive it, remove the key
// its host user added for an encrypted directory (which locks that
// directory on the host), or encrypt an empty directory of the user's
// with a key of its own. They are answered EOPNOTSUPP, as on a file system
// without encryption; the ioctls that only read (the policy, a key's
// status, the nonce) pass.
const (
	ioctlFscryptSetPolicy  = 0x800c6613 // FS_IOC_SET_ENCRYPTION_POLICY (_IOR by a historical mistake)
	ioctlFscryptAddKey     = 0xc0506617 // FS_IOC_ADD_ENCRYPTION_KEY
	ioctlFscryptRemoveKey  = 0xc0406618 // FS_IOC_REMOVE_ENCRYPTION_KEY
	ioctlFscryptRemoveKeys = 0xc0406619 // FS_IOC_REMOVE_ENCRYPTION_KEY_ALL_USERS
)

// btrfs's snapshot ioctls copy a whole subvolume from an fd of its root:
// the file system's own tree, not the sandbox's view of it, so the copy
// holds the paths the sandbox has masked (denied files, hidden sockets)
// as they are on disk. btrfs asks only that the caller own the subvolume,
// which the sandbox's user does for the trees it is granted, so a grant
// whose root is a subvolume (a project made as one, a container's tree)
// gave its denied files to a snapshot made in a read-write grant. They are
// refused with EPERM, as btrfs refuses a caller that does not own the
// subvolume. (Creating an empty subvolume, which copies nothing, passes.)
const (
	ioctlBtrfsSnapCreate   = 0x50009401 // BTRFS_IOC_SNAP_CREATE
	ioctlBtrfsSnapCreateV2 = 0x50009417 // BTRFS_IOC_SNAP_CREATE_V2
)

// Address families socket(2) and socketpair(2) may use.
const (
	afUnix  = 1
	afInet  = 2
	afInet6 = 10
)

// inetProtocols are the protocols socket(2) may ask for in AF_INET and
// AF_INET6: the default (0), ICMP and ICMPv6 (ping sockets), TCP, UDP and
// MPTCP (Go asks for it first where it may, and falls back to TCP).
var inetProtocols = []uint32{0, 1, 6, 17, 58, 262}

// Linux errno values (the same on x86_64 and aarch64).
const (
	errnoEPROTONOSUPPORT = 93
	errnoEPERM           = 1
	errnoENOSYS          = 38
	errnoEAFNOSUPPORT    = 97
	errnoEOPNOTSUPP      = 95
	errnoENOMEM          = 12
)

// seccomp return actions (linux/seccomp.h).
const (
	retKillProcess = 0x80000000
	retErrno       = 0x00050000
	retAllow       = 0x7fff0000
)

// Offsets into struct seccomp_data { int nr; __u32 arch; __u64
// instruction_pointer; __u64 args[6]; }. Both supported architectures are
// little-endian, so the low half of an argument comes first.
const (
	offNr   = 0
	offArch = 4
	offArgs = 16
)

// argLow returns the offset of the low 32 bits of argument i.
func argLow(i int) uint32 { return offArgs + 8*uint32(i) }

// argHigh returns the offset of the high 32 bits of argument i.
func argHigh(i int) uint32 { return argLow(i) + 4 }
