package seccomp

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Audit architecture values of foreign ABIs.
const (
	auditI386 = 0x40000003 // AUDIT_ARCH_I386
	auditARM  = 0x40000028 // AUDIT_ARCH_ARM
)

// Clone flags used by ordinary programs.
const (
	cloneVM      = 0x100
	cloneFS      = 0x200
	cloneFiles   = 0x400
	cloneSighand = 0x800
	clonePidfd   = 0x1000
	cloneVfork   = 0x4000
	cloneThread  = 0x10000
	cloneSysvsem = 0x40000
	cloneSettls  = 0x80000
	sigchld      = 17

	cloneNewUser = 0x10000000
)

// action names a seccomp return value so test failures read well.
func action(k uint32) string {
	switch {
	case k == retAllow:
		return "allow"
	case k == retKillProcess:
		return "kill process"
	case k&0xffff0000 == retErrno:
		return fmt.Sprintf("errno %d", k&0xffff)
	}
	return fmt.Sprintf("action %#x", k)
}

var (
	allow           = action(retAllow)
	kill            = action(retKillProcess)
	done            = action(retErrno) // errno 0: answered as done, not made
	eperm           = action(retErrno | errnoEPERM)
	enosys          = action(retErrno | errnoENOSYS)
	eafnosupport    = action(retErrno | errnoEAFNOSUPPORT)
	eprotonosupport = action(retErrno | errnoEPROTONOSUPPORT)
	eopnotsupp      = action(retErrno | errnoEOPNOTSUPP)
	enomem          = action(retErrno | errnoENOMEM)
)

// call is one synthetic syscall.
type call struct {
	name string // syscall name in the arch's table
	nr   int32  // used when name is empty
	arch uint32 // 0 means the filter's own architecture
	args [6]uint64
}

// evaluate builds the filter for archName and runs it on c.
func evaluate(t *testing.T, archName string, opts Options, c call) string {
	t.Helper()
	prog, err := Build(archName, opts)
	if err != nil {
		t.Fatalf("Build(%q): %v", archName, err)
	}
	if err := validate(prog); err != nil {
		t.Fatalf("Build(%q) made a program the kernel would refuse: %v", archName, err)
	}
	a := arches[archName]
	d := seccompData{nr: c.nr, arch: c.arch, args: c.args}
	if d.arch == 0 {
		d.arch = a.audit
	}
	if c.name != "" {
		n, ok := a.sysnum[c.name]
		if !ok {
			t.Fatalf("no syscall %q on %s", c.name, archName)
		}
		d.nr = int32(n)
	}
	k, err := run(prog, d)
	if err != nil {
		t.Fatalf("running the %s filter: %v", archName, err)
	}
	return action(k)
}

func TestFilterCalls(t *testing.T) {
	for _, archName := range []string{ArchX8664, ArchAArch64} {
		t.Run(archName, func(t *testing.T) {
			tests := []struct {
				desc string
				opts Options
				call call
				want string
			}{
				{"read", Options{}, call{name: "read"}, allow},
				{"write", Options{}, call{name: "write", args: [6]uint64{1, 0xdead, 5}}, allow},
				{"openat", Options{}, call{name: "openat"}, allow},
				{"execve", Options{}, call{name: "execve"}, allow},
				{"exit_group", Options{}, call{name: "exit_group"}, allow},
				{"clone for a thread", Options{}, call{name: "clone", args: [6]uint64{cloneVM | cloneFS | cloneFiles | cloneSighand | cloneSysvsem | cloneThread | cloneSettls}}, allow},
				{"clone for fork", Options{}, call{name: "clone", args: [6]uint64{sigchld}}, allow},
				{"clone for os/exec", Options{}, call{name: "clone", args: [6]uint64{cloneVfork | cloneVM | clonePidfd | sigchld}}, allow},
				{"clone CLONE_NEWUSER", Options{}, call{name: "clone", args: [6]uint64{cloneNewUser | sigchld}}, eperm},
				{"clone CLONE_NEWUSER with high bits", Options{}, call{name: "clone", args: [6]uint64{0xffffffff00000000 | cloneNewUser}}, eperm},
				{"clone high bits only", Options{}, call{name: "clone", args: [6]uint64{0xffffffff00000000 | sigchld}}, allow},
				{"clone3", Options{}, call{name: "clone3"}, enosys},
				{"personality query", Options{}, call{name: "personality", args: [6]uint64{0xffffffff}}, allow},
				{"personality PER_LINUX", Options{}, call{name: "personality", args: [6]uint64{0}}, allow},
				{"personality ADDR_NO_RANDOMIZE", Options{}, call{name: "personality", args: [6]uint64{0x0040000}}, eperm},
				{"personality PER_LINUX32", Options{}, call{name: "personality", args: [6]uint64{0x0008}}, eperm},
				{"personality READ_IMPLIES_EXEC", Options{}, call{name: "personality", args: [6]uint64{0x0400000}}, eperm},
				{"ioctl TCGETS", Options{}, call{name: "ioctl", args: [6]uint64{0, 0x5401}}, allow},
				{"ioctl FIONREAD", Options{}, call{name: "ioctl", args: [6]uint64{3, 0x541b}}, allow},
				{"ioctl TIOCSTI", Options{}, call{name: "ioctl", args: [6]uint64{0, ioctlTIOCSTI}}, eperm},
				{"ioctl TIOCLINUX", Options{}, call{name: "ioctl", args: [6]uint64{0, ioctlTIOCLINUX}}, eperm},
				{"ioctl TIOCSETD", Options{}, call{name: "ioctl", args: [6]uint64{0, ioctlTIOCSETD}}, eperm},
				{"ioctl TIOCSETD with high bits", Options{}, call{name: "ioctl", args: [6]uint64{0, 0xffffffff00000000 | ioctlTIOCSETD}}, eperm},
				{"ioctl TIOCGETD", Options{}, call{name: "ioctl", args: [6]uint64{0, 0x5424}}, allow},
				{"ioctl FS_IOC_SETFLAGS", Options{}, call{name: "ioctl", args: [6]uint64{3, ioctlFSSetflags}}, eperm},
				{"ioctl FS_IOC32_SETFLAGS", Options{}, call{name: "ioctl", args: [6]uint64{3, ioctlFSSetflags32}}, eperm},
				{"ioctl FS_IOC_GETFLAGS", Options{}, call{name: "ioctl", args: [6]uint64{3, 0x80086601}}, allow},
				{"mmap anonymous", Options{}, call{name: "mmap", args: [6]uint64{0, 4096, 3, 0x22, ^uint64(0), 0}}, allow},
				{"mmap MAP_HUGETLB", Options{}, call{name: "mmap", args: [6]uint64{0, 2 << 20, 3, 0x22 | mapHugetlb, ^uint64(0), 0}}, enomem},
				{"mmap MAP_HUGETLB with a page size", Options{}, call{name: "mmap", args: [6]uint64{0, 1 << 30, 3, 30<<26 | 0x22 | mapHugetlb, ^uint64(0), 0}}, enomem},
				{"mmap MAP_HUGETLB with high bits", Options{}, call{name: "mmap", args: [6]uint64{0, 2 << 20, 3, 0xffffffff00000000 | mapHugetlb | 0x22, ^uint64(0), 0}}, enomem},
				{"mmap high bits only", Options{}, call{name: "mmap", args: [6]uint64{0, 4096, 3, 0xffffffff00000000 | 0x22, ^uint64(0), 0}}, allow},
				{"memfd_create MFD_CLOEXEC|MFD_ALLOW_SEALING", Options{}, call{name: "memfd_create", args: [6]uint64{0, 3}}, allow},
				{"memfd_create MFD_HUGETLB", Options{}, call{name: "memfd_create", args: [6]uint64{0, 1 | mfdHugetlb}}, enomem},
				{"shmget", Options{}, call{name: "shmget", args: [6]uint64{0, 4096, 0o1600}}, allow},
				{"shmget SHM_HUGETLB", Options{}, call{name: "shmget", args: [6]uint64{0, 2 << 20, 0o1600 | shmHugetlb}}, enomem},
				{"ioctl FS_IOC_RESVSP", Options{}, call{name: "ioctl", args: [6]uint64{3, ioctlFSResvsp}}, eopnotsupp},
				{"ioctl FS_IOC_RESVSP64", Options{}, call{name: "ioctl", args: [6]uint64{3, ioctlFSResvsp64}}, eopnotsupp},
				{"ioctl FS_IOC_ZERO_RANGE", Options{}, call{name: "ioctl", args: [6]uint64{3, ioctlFSZeroRange}}, eopnotsupp},
				{"ioctl FS_IOC_RESVSP64 with high bits", Options{}, call{name: "ioctl", args: [6]uint64{3, 0xffffffff00000000 | ioctlFSResvsp64}}, eopnotsupp},
				{"ioctl FS_IOC_UNRESVSP64", Options{}, call{name: "ioctl", args: [6]uint64{3, 0x4030582b}}, allow},
				{"ioctl FS_IOC_UNRESVSP", Options{}, call{name: "ioctl", args: [6]uint64{3, 0x40305829}}, allow},
				{"ioctl FS_IOC_SET_ENCRYPTION_POLICY", Options{}, call{name: "ioctl", args: [6]uint64{3, ioctlFscryptSetPolicy}}, eopnotsupp},
				{"ioctl FS_IOC_ADD_ENCRYPTION_KEY", Options{}, call{name: "ioctl", args: [6]uint64{3, ioctlFscryptAddKey}}, eopnotsupp},
				{"ioctl FS_IOC_REMOVE_ENCRYPTION_KEY", Options{}, call{name: "ioctl", args: [6]uint64{3, ioctlFscryptRemoveKey}}, eopnotsupp},
				{"ioctl FS_IOC_REMOVE_ENCRYPTION_KEY_ALL_USERS", Options{}, call{name: "ioctl", args: [6]uint64{3, ioctlFscryptRemoveKeys}}, eopnotsupp},
				{"ioctl FS_IOC_ADD_ENCRYPTION_KEY with high bits", Options{}, call{name: "ioctl", args: [6]uint64{3, 0xffffffff00000000 | ioctlFscryptAddKey}}, eopnotsupp},
				{"ioctl FS_IOC_GET_ENCRYPTION_POLICY_EX", Options{}, call{name: "ioctl", args: [6]uint64{3, 0xc0096616}}, allow},
				{"ioctl FS_IOC_GET_ENCRYPTION_KEY_STATUS", Options{}, call{name: "ioctl", args: [6]uint64{3, 0xc080661a}}, allow},
				{"ioctl BTRFS_IOC_SNAP_CREATE", Options{}, call{name: "ioctl", args: [6]uint64{3, ioctlBtrfsSnapCreate}}, eperm},
				{"ioctl BTRFS_IOC_SNAP_CREATE_V2", Options{}, call{name: "ioctl", args: [6]uint64{3, ioctlBtrfsSnapCreateV2}}, eperm},
				{"ioctl BTRFS_IOC_SNAP_CREATE_V2 with high bits", Options{}, call{name: "ioctl", args: [6]uint64{3, 0xffffffff00000000 | ioctlBtrfsSnapCreateV2}}, eperm},
				{"ioctl BTRFS_IOC_SUBVOL_CREATE", Options{}, call{name: "ioctl", args: [6]uint64{3, 0x5000940e}}, allow},
				{"ioctl TIOCSTI with high bits", Options{}, call{name: "ioctl", args: [6]uint64{0, 0xffffffff00005412}}, eperm},
				{"ioctl TIOCLINUX with one high bit", Options{}, call{name: "ioctl", args: [6]uint64{0, 0x000000010000541c}}, eperm},
				{"ioctl TIOCSTI as fd", Options{}, call{name: "ioctl", args: [6]uint64{ioctlTIOCSTI, 0x5401}}, allow},
				{"setrlimit RLIMIT_NOFILE", Options{}, call{name: "setrlimit", args: [6]uint64{7, 0xdead}}, allow},
				{"setrlimit RLIMIT_CORE", Options{}, call{name: "setrlimit", args: [6]uint64{rlimitCore, 0xdead}}, done},
				{"setrlimit RLIMIT_CORE with high bits", Options{}, call{name: "setrlimit", args: [6]uint64{0xffffffff00000000 | rlimitCore, 0xdead}}, done},
				{"prlimit64 get RLIMIT_CORE", Options{}, call{name: "prlimit64", args: [6]uint64{0, rlimitCore, 0, 0xdead}}, allow},
				{"prlimit64 set RLIMIT_CORE", Options{}, call{name: "prlimit64", args: [6]uint64{0, rlimitCore, 0xdead, 0}}, done},
				{"prlimit64 set RLIMIT_CORE, pointer in the high half", Options{}, call{name: "prlimit64", args: [6]uint64{0, rlimitCore, 0x7fff00000000, 0}}, done},
				{"prlimit64 set and get RLIMIT_CORE", Options{}, call{name: "prlimit64", args: [6]uint64{0, rlimitCore, 0xdead, 0xbeef}}, eperm},
				{"prlimit64 set and get RLIMIT_CORE, old in the high half", Options{}, call{name: "prlimit64", args: [6]uint64{0, rlimitCore, 0xdead, 0x7fff00000000}}, eperm},
				{"prlimit64 set RLIMIT_NOFILE", Options{}, call{name: "prlimit64", args: [6]uint64{0, 7, 0xdead, 0xbeef}}, allow},
				{"socket AF_INET", Options{}, call{name: "socket", args: [6]uint64{afInet, 1}}, allow},
				{"socket AF_INET6", Options{}, call{name: "socket", args: [6]uint64{afInet6, 2}}, allow},
				{"socket AF_INET TCP", Options{}, call{name: "socket", args: [6]uint64{afInet, 1, 6}}, allow},
				{"socket AF_INET6 UDP", Options{}, call{name: "socket", args: [6]uint64{afInet6, 2, 17}}, allow},
				{"socket AF_INET ping", Options{}, call{name: "socket", args: [6]uint64{afInet, 2, 1}}, allow},
				{"socket AF_INET6 ping", Options{}, call{name: "socket", args: [6]uint64{afInet6, 2, 58}}, allow},
				{"socket AF_INET MPTCP", Options{}, call{name: "socket", args: [6]uint64{afInet, 1, 262}}, allow},
				{"socket AF_INET SCTP", Options{}, call{name: "socket", args: [6]uint64{afInet, 1, 132}}, eprotonosupport},
				{"socket AF_INET6 SCTP seqpacket", Options{}, call{name: "socket", args: [6]uint64{afInet6, 5, 132}}, eprotonosupport},
				{"socket AF_INET DCCP", Options{}, call{name: "socket", args: [6]uint64{afInet, 6, 33}}, eprotonosupport},
				{"socket AF_INET L2TP", Options{}, call{name: "socket", args: [6]uint64{afInet, 2, 115}}, eprotonosupport},
				{"socket AF_INET TCP with high bits", Options{}, call{name: "socket", args: [6]uint64{afInet, 1, 0x100000006}}, allow},
				{"socket AF_INET SCTP in high bits only", Options{}, call{name: "socket", args: [6]uint64{afInet, 1, 0x8400000000}}, allow},
				{"socket AF_UNIX", Options{}, call{name: "socket", args: [6]uint64{afUnix, 1}}, allow},
				{"socket AF_UNIX denied by option", Options{DenyUnixSockets: true}, call{name: "socket", args: [6]uint64{afUnix, 1}}, eafnosupport},
				{"socket AF_INET with AF_UNIX denied", Options{DenyUnixSockets: true}, call{name: "socket", args: [6]uint64{afInet, 1}}, allow},
				{"socket AF_UNSPEC", Options{}, call{name: "socket", args: [6]uint64{0, 1}}, eafnosupport},
				{"socket AF_NETLINK", Options{}, call{name: "socket", args: [6]uint64{16, 3}}, eafnosupport},
				{"socket AF_PACKET", Options{}, call{name: "socket", args: [6]uint64{17, 3}}, eafnosupport},
				{"socket AF_VSOCK", Options{}, call{name: "socket", args: [6]uint64{40, 1}}, eafnosupport},
				{"socket AF_ALG", Options{}, call{name: "socket", args: [6]uint64{38, 5}}, eafnosupport},
				{"socket AF_NETLINK with high bits", Options{}, call{name: "socket", args: [6]uint64{0x100000010, 3}}, eafnosupport},
				{"socketpair AF_UNIX", Options{}, call{name: "socketpair", args: [6]uint64{afUnix, 1}}, allow},
				{"socketpair AF_NETLINK", Options{}, call{name: "socketpair", args: [6]uint64{16, 3}}, eafnosupport},
				{"i386 ABI", Options{}, call{nr: 26, arch: auditI386}, kill},
				{"arm ABI", Options{}, call{nr: 26, arch: auditARM}, kill},
				{"unknown arch", Options{}, call{nr: 0, arch: 0xffffffff}, kill},
			}
			for _, tt := range tests {
				t.Run(tt.desc, func(t *testing.T) {
					if got := evaluate(t, archName, tt.opts, tt.call); got != tt.want {
						t.Errorf("%s: got %s, want %s", tt.desc, got, tt.want)
					}
				})
			}
		})
	}
}

func TestFilterX32(t *testing.T) {
	// -1 is 0xffffffff, which has the x32 bit too.
	for _, nr := range []int32{x32Bit, x32Bit | 39, x32Bit | 101, x32Bit | 512, -1} {
		if got := evaluate(t, ArchX8664, Options{}, call{nr: nr}); got != enosys {
			t.Errorf("x86_64 nr %#x: got %s, want %s", uint32(nr), got, enosys)
		}
	}
	// aarch64 has no x32: such a number is just an unknown syscall, which the
	// kernel answers with ENOSYS itself.
	if got := evaluate(t, ArchAArch64, Options{}, call{nr: x32Bit | 39}); got != allow {
		t.Errorf("aarch64 nr %#x: got %s, want %s", x32Bit|39, got, allow)
	}
}

// TestFilterEveryDenied runs every syscall the policy refuses outright, with
// zero and with all-ones arguments, and every other syscall of the table,
// which must be allowed.
func TestFilterEveryDenied(t *testing.T) {
	conditional := []string{sysClone, sysClone3, sysPersonality, sysIoctl, sysSocket, sysSocketpair, sysOpenat2, sysMmap, sysMemfdCreate, sysShmget}
	for _, m := range modeChecks {
		conditional = append(conditional, m.name)
	}
	for _, archName := range []string{ArchX8664, ArchAArch64} {
		t.Run(archName, func(t *testing.T) {
			a := arches[archName]
			got := make(map[string]string)
			want := make(map[string]string)
			for name := range a.sysnum {
				if slices.Contains(conditional, name) {
					continue
				}
				want[name] = allow
				if slices.Contains(denyAlways, name) {
					want[name] = eperm
				}
				got[name] = evaluate(t, archName, Options{}, call{name: name})
				ones := evaluate(t, archName, Options{}, call{name: name, args: [6]uint64{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}})
				if ones != got[name] {
					t.Errorf("%s: %s with zero arguments but %s with all-ones arguments", name, got[name], ones)
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("actions by syscall (-want +got):\n%s", diff)
			}
		})
	}
}

// TestFilterSetID checks that no call can give a file the set-user-ID or
// set-group-ID bit, whichever argument carries the mode and whatever else is
// in it, while every other mode, and a mode an open without O_CREAT or
// O_TMPFILE ignores, is allowed.
func TestFilterSetID(t *testing.T) {
	const (
		oCreat   = 0o100
		oTmpfile = 0o20000000 | 0o200000 // __O_TMPFILE | O_DIRECTORY
		oWronly  = 1
		sIFREG   = 0o100000
		high     = 0xffffffff00000000
	)
	// at is the index of the mode argument; flagsAt that of the open flags,
	// or -1.
	calls := []struct {
		name        string
		at, flagsAt int
	}{
		{"chmod", 1, -1}, {"fchmod", 1, -1}, {"creat", 1, -1}, {"mknod", 1, -1},
		{"fchmodat", 2, -1}, {"fchmodat2", 2, -1}, {"mknodat", 2, -1},
		{"open", 2, 1}, {"openat", 3, 2},
	}
	for _, archName := range []string{ArchX8664, ArchAArch64} {
		for _, c := range calls {
			if _, ok := arches[archName].sysnum[c.name]; !ok {
				continue
			}
			t.Run(archName+"/"+c.name, func(t *testing.T) {
				check := func(mode, flags uint64, want string) {
					t.Helper()
					var args [6]uint64
					args[c.at] = mode
					if c.flagsAt >= 0 {
						args[c.flagsAt] = flags
					}
					if got := evaluate(t, archName, Options{}, call{name: c.name, args: args}); got != want {
						t.Errorf("%s(mode %#o, flags %#o): got %s, want %s", c.name, mode, flags, got, want)
					}
				}
				for _, mode := range []uint64{0, 0o644, 0o755, 0o1777, 0o777 | sIFREG, high | 0o755} {
					check(mode, oCreat|oWronly, allow)
				}
				for _, mode := range []uint64{0o4755, 0o2755, 0o6777, 0o4000, 0o2000, sIFREG | 0o4755, high | 0o4755} {
					check(mode, oCreat|oWronly, eperm)
					if c.flagsAt >= 0 {
						check(mode, oTmpfile|oWronly, eperm)
						check(mode, high|oCreat, eperm)
						// Without O_CREAT or O_TMPFILE the kernel ignores the mode.
						check(mode, oWronly, allow)
					}
				}
			})
		}
		t.Run(archName+"/openat2", func(t *testing.T) {
			for _, args := range [][6]uint64{{}, {^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}} {
				if got := evaluate(t, archName, Options{}, call{name: "openat2", args: args}); got != enosys {
					t.Errorf("openat2%v: got %s, want %s", args, got, enosys)
				}
			}
		})
	}
}

// TestFilterFallocate: allocating past the end without growing the file
// (FALLOC_FL_KEEP_SIZE, also with ZERO_RANGE) or inserting a range meets
// no RLIMIT_FSIZE, so it is refused; a plain allocation, which grows the
// file and meets the limit, and punching a hole, which frees blocks, pass.
func TestFilterFallocate(t *testing.T) {
	const high = 0xffffffff00000000
	for _, archName := range []string{ArchX8664, ArchAArch64} {
		for _, tt := range []struct {
			mode uint64
			want string
		}{
			{0, allow},
			{0x01, eopnotsupp},        // KEEP_SIZE
			{0x01 | 0x10, eopnotsupp}, // KEEP_SIZE | ZERO_RANGE
			{0x10, allow},             // ZERO_RANGE grows the file: the limit holds
			{0x20, eopnotsupp},        // INSERT_RANGE
			{0x01 | 0x02, allow},      // PUNCH_HOLE (with KEEP_SIZE, as it must be)
			{0x08, allow},             // COLLAPSE_RANGE shrinks
			{high | 0x01, eopnotsupp}, // high bits do not hide it
			{high, allow},
		} {
			if got := evaluate(t, archName, Options{}, call{name: "fallocate", args: [6]uint64{3, tt.mode, 0, 1 << 30}}); got != tt.want {
				t.Errorf("%s: fallocate(mode %#x): got %s, want %s", archName, tt.mode, got, tt.want)
			}
		}
	}
}

func TestFilterCloneNamespaceFlags(t *testing.T) {
	flags := map[string]uint64{
		"CLONE_NEWNS": 0x00020000, "CLONE_NEWCGROUP": 0x02000000, "CLONE_NEWUTS": 0x04000000,
		"CLONE_NEWIPC": 0x08000000, "CLONE_NEWUSER": 0x10000000, "CLONE_NEWPID": 0x20000000,
		"CLONE_NEWNET": 0x40000000, "CLONE_NEWTIME": 0x00000080,
	}
	for _, archName := range []string{ArchX8664, ArchAArch64} {
		for name, flag := range flags {
			t.Run(archName+"/"+name, func(t *testing.T) {
				c := call{name: "clone", args: [6]uint64{flag | sigchld}}
				if got := evaluate(t, archName, Options{}, c); got != eperm {
					t.Errorf("clone(%s): got %s, want %s", name, got, eperm)
				}
			})
		}
	}
}

func TestPolicyNamesExist(t *testing.T) {
	seen := make(map[string]bool)
	for _, name := range denyAlways {
		if seen[name] {
			t.Errorf("%q is listed twice", name)
		}
		seen[name] = true
		if _, ok := sysnumX8664[name]; !ok {
			if _, ok := sysnumAArch64[name]; !ok {
				t.Errorf("%q is no syscall on any supported architecture", name)
			}
		}
	}
	for archName, a := range arches {
		for _, name := range []string{sysClone, sysClone3, sysPersonality, sysIoctl, sysSocket, sysSocketpair, sysOpenat2, "openat", "fchmod", "fchmodat", "fchmodat2", "mknodat"} {
			if _, ok := a.sysnum[name]; !ok {
				t.Errorf("%s has no %q, which the filter inspects", archName, name)
			}
		}
	}
}

func TestDenied(t *testing.T) {
	x86 := Denied(ArchX8664)
	arm := Denied(ArchAArch64)
	var onlyX86 []string
	for _, name := range x86 {
		if !slices.Contains(arm, name) {
			onlyX86 = append(onlyX86, name)
		}
	}
	want := []string{"_sysctl", "chmod", "creat", "iopl", "ioperm", "mknod", "modify_ldt", "open", "sysfs", "uselib", "ustat"}
	slices.Sort(want)
	if diff := cmp.Diff(want, onlyX86); diff != "" {
		t.Errorf("syscalls denied on x86_64 only (-want +got):\n%s", diff)
	}
	for _, name := range arm {
		if !slices.Contains(x86, name) {
			t.Errorf("%q is denied on aarch64 only", name)
		}
	}
	for _, name := range []string{"ptrace", "io_uring_setup", "open_tree_attr", "clone", "clone3", "socket", "ioctl", "personality", "openat", "openat2", "fallocate", "fchmod", "fchmodat", "fchmodat2", "mknodat"} {
		if !slices.Contains(arm, name) {
			t.Errorf("Denied(%q) lacks %q", ArchAArch64, name)
		}
	}
	if !slices.IsSorted(x86) {
		t.Errorf("Denied(%q) is not sorted: %v", ArchX8664, x86)
	}
	if got := Denied("i386"); got != nil {
		t.Errorf("Denied(i386) = %v, want nil", got)
	}
}

func TestBuildUnsupportedArch(t *testing.T) {
	for _, name := range []string{"", "i386", "armv7l", "amd64"} {
		if _, err := Build(name, Options{}); !errors.Is(err, ErrUnsupportedArch) {
			t.Errorf("Build(%q) error = %v, want ErrUnsupportedArch", name, err)
		}
	}
}

func TestNativeArch(t *testing.T) {
	if name := NativeArch(); name != "" {
		if _, ok := arches[name]; !ok {
			t.Errorf("NativeArch() = %q, which has no table", name)
		}
	}
}

func BenchmarkBuild(b *testing.B) {
	for _, archName := range []string{ArchX8664, ArchAArch64} {
		b.Run(archName, func(b *testing.B) {
			for b.Loop() {
				if _, err := Build(archName, Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
