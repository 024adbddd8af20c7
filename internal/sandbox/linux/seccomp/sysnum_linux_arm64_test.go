package seccomp

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestTableArm64 checks the generated table against the constants
// golang.org/x/sys compiles for this architecture, for every syscall the
// policy names.
func TestTableArm64(t *testing.T) {
	for _, c := range []struct {
		name string
		nr   uint32
	}{
		{"ptrace", unix.SYS_PTRACE},
		{"process_vm_readv", unix.SYS_PROCESS_VM_READV},
		{"process_vm_writev", unix.SYS_PROCESS_VM_WRITEV},
		{"pidfd_getfd", unix.SYS_PIDFD_GETFD},
		{"kcmp", unix.SYS_KCMP},
		{"mount", unix.SYS_MOUNT},
		{"umount2", unix.SYS_UMOUNT2},
		{"pivot_root", unix.SYS_PIVOT_ROOT},
		{"chroot", unix.SYS_CHROOT},
		{"fsopen", unix.SYS_FSOPEN},
		{"fsconfig", unix.SYS_FSCONFIG},
		{"fsmount", unix.SYS_FSMOUNT},
		{"fspick", unix.SYS_FSPICK},
		{"move_mount", unix.SYS_MOVE_MOUNT},
		{"open_tree", unix.SYS_OPEN_TREE},
		{"open_tree_attr", unix.SYS_OPEN_TREE_ATTR},
		{"mount_setattr", unix.SYS_MOUNT_SETATTR},
		{"unshare", unix.SYS_UNSHARE},
		{"setns", unix.SYS_SETNS},
		{"keyctl", unix.SYS_KEYCTL},
		{"add_key", unix.SYS_ADD_KEY},
		{"request_key", unix.SYS_REQUEST_KEY},
		{"bpf", unix.SYS_BPF},
		{"perf_event_open", unix.SYS_PERF_EVENT_OPEN},
		{"io_uring_setup", unix.SYS_IO_URING_SETUP},
		{"io_uring_enter", unix.SYS_IO_URING_ENTER},
		{"io_uring_register", unix.SYS_IO_URING_REGISTER},
		{"userfaultfd", unix.SYS_USERFAULTFD},
		{"kexec_load", unix.SYS_KEXEC_LOAD},
		{"kexec_file_load", unix.SYS_KEXEC_FILE_LOAD},
		{"init_module", unix.SYS_INIT_MODULE},
		{"finit_module", unix.SYS_FINIT_MODULE},
		{"delete_module", unix.SYS_DELETE_MODULE},
		{"open_by_handle_at", unix.SYS_OPEN_BY_HANDLE_AT},
		{"name_to_handle_at", unix.SYS_NAME_TO_HANDLE_AT},
		{"swapon", unix.SYS_SWAPON},
		{"swapoff", unix.SYS_SWAPOFF},
		{"syslog", unix.SYS_SYSLOG},
		{"acct", unix.SYS_ACCT},
		{"reboot", unix.SYS_REBOOT},
		{"vhangup", unix.SYS_VHANGUP},
		{"quotactl", unix.SYS_QUOTACTL},
		{"quotactl_fd", unix.SYS_QUOTACTL_FD},
		{"nfsservctl", unix.SYS_NFSSERVCTL},
		{"lookup_dcookie", unix.SYS_LOOKUP_DCOOKIE},
		{"settimeofday", unix.SYS_SETTIMEOFDAY},
		{"clock_settime", unix.SYS_CLOCK_SETTIME},
		{"clock_adjtime", unix.SYS_CLOCK_ADJTIME},
		{"adjtimex", unix.SYS_ADJTIMEX},
		{"clone", unix.SYS_CLONE},
		{"clone3", unix.SYS_CLONE3},
		{"personality", unix.SYS_PERSONALITY},
		{"ioctl", unix.SYS_IOCTL},
		{"socket", unix.SYS_SOCKET},
		{"socketpair", unix.SYS_SOCKETPAIR},
		{"read", unix.SYS_READ},
		{"write", unix.SYS_WRITE},
		{"openat", unix.SYS_OPENAT},
		{"execve", unix.SYS_EXECVE},
	} {
		if got, ok := sysnumAArch64[c.name]; !ok || got != c.nr {
			t.Errorf("sysnumAArch64[%q] = %d, %t; want %d", c.name, got, ok, c.nr)
		}
	}
}
