package seccomp

import (
	"errors"
	"fmt"
	"runtime"
	"sort"
)

// Architecture names, as uname -m prints them.
const (
	ArchX8664   = "x86_64"
	ArchAArch64 = "aarch64"
)

// ErrUnsupportedArch is returned for an architecture the filter has no
// syscall table for.
var ErrUnsupportedArch = errors.New("seccomp filter: unsupported architecture")

// Options are the filter's choices. The zero value is the default policy.
type Options struct {
	// DenyUnixSockets refuses socket(AF_UNIX) and socketpair(AF_UNIX) too.
	// By default they are allowed: local IPC and the egress forwarder's
	// bridge need them, and a Unix socket reaches nothing outside the
	// sandbox's own mounts.
	DenyUnixSockets bool
}

// arch describes one supported architecture.
type arch struct {
	audit  uint32            // AUDIT_ARCH_* value seccomp_data.arch holds
	sysnum map[string]uint32 // syscall numbers by name
	x32    bool              // whether numbers with bit 0x40000000 are the x32 ABI
}

// x32Bit is __X32_SYSCALL_BIT.
const x32Bit = 0x40000000

var arches = map[string]arch{
	ArchX8664:   {audit: 0xc000003e, sysnum: sysnumX8664, x32: true}, // AUDIT_ARCH_X86_64
	ArchAArch64: {audit: 0xc00000b7, sysnum: sysnumAArch64},          // AUDIT_ARCH_AARCH64
}

// NativeArch returns the name of the architecture this binary runs on, or ""
// when the filter does not support it.
func NativeArch() string {
	switch runtime.GOARCH {
	case "amd64":
		return ArchX8664
	case "arm64":
		return ArchAArch64
	}
	return ""
}

// lookup returns the description of the named architecture.
func lookup(name string) (arch, error) {
	a, ok := arches[name]
	if !ok {
		return arch{}, fmt.Errorf("%w: %q (want %s or %s)", ErrUnsupportedArch, name, ArchX8664, ArchAArch64)
	}
	return a, nil
}

// Build returns the filter program for the named architecture.
//
// The program first kills the process for any other architecture (an i386
// syscall made with int 0x80 from a 64-bit process, for example) and, on
// x86_64, refuses every x32 syscall with ENOSYS, as a kernel built without x32
// does; then it refuses the syscalls the package comment lists and allows
// everything else.
func Build(archName string, opts Options) ([]Instruction, error) {
	a, err := lookup(archName)
	if err != nil {
		return nil, err
	}
	nr := func(name string) uint32 {
		n, ok := a.sysnum[name]
		if !ok {
			// Only reached for the specially handled syscalls, which every
			// supported architecture has (TestPolicyNamesExist).
			panic(fmt.Sprintf("seccomp: no syscall %q on %s", name, archName))
		}
		return n
	}
	var p assembler

	p.load(offArch)
	p.jump(opJeqK, a.audit, "", "kill")
	p.load(offNr)
	if a.x32 {
		p.jump(opJsetK, x32Bit, "enosys", "")
	}
	p.jump(opJeqK, nr(sysClone), "clone", "")
	p.jump(opJeqK, nr(sysClone3), "enosys", "")
	p.jump(opJeqK, nr(sysPersonality), "personality", "")
	p.jump(opJeqK, nr(sysIoctl), "ioctl", "")
	p.jump(opJeqK, nr(sysSocket), "socket", "")
	p.jump(opJeqK, nr(sysSocketpair), "socket", "")
	for _, m := range modeChecks {
		if n, ok := a.sysnum[m.name]; ok {
			p.jump(opJeqK, n, m.label(), "")
		}
	}
	p.jump(opJeqK, nr(sysOpenat2), "enosys", "")
	p.jump(opJeqK, nr(sysFallocate), "fallocate", "")
	p.jump(opJeqK, nr(sysFcntl), "fcntl", "")
	p.jump(opJeqK, nr(sysSetrlimit), "setrlimit", "")
	p.jump(opJeqK, nr(sysPrlimit64), "prlimit64", "")
	p.jump(opJeqK, nr(sysMmap), "mmap", "")
	p.jump(opJeqK, nr(sysMemfdCreate), "memfd_create", "")
	p.jump(opJeqK, nr(sysShmget), "shmget", "")
	for _, name := range denyAlways {
		if n, ok := a.sysnum[name]; ok {
			p.jump(opJeqK, n, "eperm", "")
		}
	}
	p.ret(retAllow)

	// clone(flags, ...): flags is the first argument on both architectures.
	p.label("clone")
	p.load(argLow(0))
	p.jump(opJsetK, cloneNamespaceFlags, "eperm", "allow")

	// personality(unsigned int): only the low 32 bits count.
	p.label("personality")
	p.load(argLow(0))
	p.jump(opJeqK, personalityLinux, "allow", "")
	p.jump(opJeqK, personalityQuery, "allow", "eperm")

	// ioctl(fd, unsigned int cmd, ...): the kernel truncates cmd to 32 bits,
	// so high bits set must not slip a request past the comparison.
	p.label("ioctl")
	p.load(argLow(1))
	p.jump(opJeqK, ioctlTIOCSTI, "eperm", "")
	p.jump(opJeqK, ioctlTIOCLINUX, "eperm", "")
	p.jump(opJeqK, ioctlTIOCSETD, "eperm", "")
	p.jump(opJeqK, ioctlFSSetflags, "eperm", "")
	p.jump(opJeqK, ioctlFSSetflags32, "eperm", "")
	// The preallocation ioctls are fallocate with FALLOC_FL_KEEP_SIZE
	// (see the fallocate check below).
	p.jump(opJeqK, ioctlFSResvsp, "eopnotsupp", "")
	p.jump(opJeqK, ioctlFSResvsp64, "eopnotsupp", "")
	p.jump(opJeqK, ioctlFSZeroRange, "eopnotsupp", "")
	// fscrypt's keys are kernel keys no namespace holds.
	p.jump(opJeqK, ioctlFscryptSetPolicy, "eopnotsupp", "")
	p.jump(opJeqK, ioctlFscryptAddKey, "eopnotsupp", "")
	p.jump(opJeqK, ioctlFscryptRemoveKey, "eopnotsupp", "")
	p.jump(opJeqK, ioctlFscryptRemoveKeys, "eopnotsupp", "")
	// A btrfs snapshot copies the subvolume as it is on disk, masked
	// paths included.
	p.jump(opJeqK, ioctlBtrfsSnapCreate, "eperm", "")
	p.jump(opJeqK, ioctlBtrfsSnapCreateV2, "eperm", "allow")

	// socket(int family, ...) and socketpair(int family, ...).
	p.label("socket")
	p.load(argLow(0))
	if !opts.DenyUnixSockets {
		p.jump(opJeqK, afUnix, "allow", "")
	}
	p.jump(opJeqK, afInet, "inetproto", "")
	p.jump(opJeqK, afInet6, "inetproto", "eafnosupport")

	// socket(AF_INET or AF_INET6, type, protocol): only the protocols the
	// kernel has built in with IP. Asked for another (SCTP, DCCP, L2TP,
	// ...), the kernel loads its module, as root, where modules load on
	// demand: kernel code no sandbox needs. (socketpair of these families
	// fails anyway.)
	p.label("inetproto")
	p.load(argLow(2))
	for _, proto := range inetProtocols {
		p.jump(opJeqK, proto, "allow", "")
	}
	p.ret(retErrno | errnoEPROTONOSUPPORT)

	// The mode of chmod(path, mode), fchmod(fd, mode), creat(path, mode)
	// and mknod(path, mode, dev) is args[1]; of fchmodat(dfd, path, mode),
	// fchmodat2(dfd, path, mode, flags) and mknodat(dfd, path, mode, dev),
	// args[2]. The kernel reads a umode_t, the low 16 bits. open(path,
	// flags, mode) and openat(dfd, path, flags, mode) read the mode only
	// when they create (O_CREAT, O_TMPFILE), and a caller may pass anything
	// in it otherwise (Go's os.OpenFile passes its perm as is), so both
	// must hold to refuse.
	emitted := map[string]bool{}
	for _, m := range modeChecks {
		if emitted[m.label()] {
			continue
		}
		emitted[m.label()] = true
		p.label(m.label())
		p.load(argLow(m.mode))
		if m.flags < 0 {
			p.jump(opJsetK, setIDBits, "eperm", "allow")
			continue
		}
		p.jump(opJsetK, setIDBits, "", "allow")
		p.load(argLow(m.flags))
		p.jump(opJsetK, createFlags, "eperm", "allow")
	}

	// fallocate(fd, int mode, offset, len): allocating without growing the
	// file (or growing it from the middle) escapes RLIMIT_FSIZE.
	p.label("fallocate")
	p.load(argLow(1))
	p.jump(opJsetK, fallocPunchHole, "allow", "")
	p.jump(opJsetK, fallocKeepSize|fallocInsertRange, "eopnotsupp", "allow")

	// fcntl(fd, unsigned int cmd, arg): the kernel reads cmd's low 32 bits.
	// A lease or a delegation on a host file stalls the host's opens of it.
	p.label("fcntl")
	p.load(argLow(1))
	p.jump(opJeqK, fcntlSetLease, "eperm", "")
	p.jump(opJeqK, fcntlSetDeleg, "eperm", "allow")

	// setrlimit(unsigned int resource, new) and prlimit64(pid, unsigned
	// int resource, new, old): the core size limit stays at the 1 the init
	// sets (coreLimit). A change of it is answered as done and not made;
	// one that also asks for the old value, which would be left unwritten,
	// is refused.
	p.label("setrlimit")
	p.load(argLow(0))
	p.jump(opJeqK, rlimitCore, "ok", "allow")
	p.label("prlimit64")
	p.load(argLow(1))
	p.jump(opJeqK, rlimitCore, "", "allow")
	p.load(argLow(2))
	p.jump(opJeqK, 0, "", "prlimit_set")
	p.load(argHigh(2))
	p.jump(opJeqK, 0, "allow", "")
	p.label("prlimit_set")
	p.load(argLow(3))
	p.jump(opJeqK, 0, "", "eperm")
	p.load(argHigh(3))
	p.jump(opJeqK, 0, "ok", "eperm")

	// mmap(addr, len, prot, flags, fd, off), memfd_create(name, flags)
	// and shmget(key, size, flags): huge pages come from a host pool no
	// memory cgroup is charged for.
	p.label("mmap")
	p.load(argLow(3))
	p.jump(opJsetK, mapHugetlb, "enomem", "allow")
	p.label("memfd_create")
	p.load(argLow(1))
	p.jump(opJsetK, mfdHugetlb, "enomem", "allow")
	p.label("shmget")
	p.load(argLow(2))
	p.jump(opJsetK, shmHugetlb, "enomem", "allow")

	p.label("allow")
	p.ret(retAllow)
	p.label("ok")
	p.ret(retErrno) // errno 0: the call returns 0, done

	p.label("eperm")
	p.ret(retErrno | errnoEPERM)
	p.label("enosys")
	p.ret(retErrno | errnoENOSYS)
	p.label("eafnosupport")
	p.ret(retErrno | errnoEAFNOSUPPORT)
	p.label("eopnotsupp")
	p.ret(retErrno | errnoEOPNOTSUPP)
	p.label("enomem")
	p.ret(retErrno | errnoENOMEM)
	p.label("kill")
	p.ret(retKillProcess)

	prog, err := p.assemble()
	if err != nil {
		return nil, fmt.Errorf("assembling the %s filter: %w", archName, err)
	}
	return prog, nil
}

// Denied returns, sorted, the names of the syscalls the filter for the named
// architecture may refuse, or nil for an unsupported architecture. clone,
// ioctl, personality, socket, socketpair, fallocate, fcntl, prlimit64,
// mmap, memfd_create, shmget and the calls that set a file's mode are
// refused only for some arguments
// (see the package comment);
// clone3 and openat2 always fail with ENOSYS.
func Denied(archName string) []string {
	a, ok := arches[archName]
	if !ok {
		return nil
	}
	names := []string{sysClone, sysClone3, sysPersonality, sysIoctl, sysSocket, sysSocketpair, sysOpenat2, sysFallocate, sysFcntl, sysPrlimit64, sysMmap, sysMemfdCreate, sysShmget}
	for _, m := range modeChecks {
		if _, ok := a.sysnum[m.name]; ok {
			names = append(names, m.name)
		}
	}
	for _, name := range denyAlways {
		if _, ok := a.sysnum[name]; ok {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}
