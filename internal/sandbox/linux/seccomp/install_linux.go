package seccomp

import (
	"fmt"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"
)

// Install sets no_new_privs and installs the filter for the running
// architecture on every thread of the process at once
// (SECCOMP_FILTER_FLAG_TSYNC), so no Go thread, present or future, escapes
// it. It cannot be undone. The in-sandbox init calls it after its mounts are
// set up and before it executes the payload; the filter is inherited across
// fork and execve.
func Install(opts Options) error {
	prog, err := Build(NativeArch(), opts)
	if err != nil {
		return err
	}
	// prctl and seccomp must run on the same thread: with TSYNC the kernel
	// copies the caller's no_new_privs to every thread it synchronises
	// (seccomp_sync_threads), so setting it on this one thread is enough,
	// and no all-threads call (a stop of the world and a signal to every
	// thread, spinning until each has run it) is needed.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	// Without no_new_privs the kernel refuses an unprivileged filter. The
	// sandbox's init usually has it from its spawner already.
	nnp, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, unix.PR_GET_NO_NEW_PRIVS, 0, 0)
	if e != 0 || nnp != 1 {
		if _, _, e = syscall.RawSyscall(syscall.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0); e != 0 {
			return fmt.Errorf("setting no_new_privs: %w", e)
		}
	}
	if err := setModeFilter(prog, unix.SECCOMP_FILTER_FLAG_TSYNC); err != nil {
		return fmt.Errorf("installing the seccomp filter: %w", err)
	}
	return nil
}
