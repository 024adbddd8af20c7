package inside

import (
	"fmt"
	"syscall"

	"github.com/airlockhq/airlock/internal/sandbox/linux/seccomp"
)

// prSetDumpable is PR_SET_DUMPABLE.
const prSetDumpable = 4

// lockdown makes the init non-dumpable, so no process of the container
// (all are container root, without capabilities) can ptrace it or read
// its memory, environment or descriptors through /proc/1; and installs
// the native sandbox's seccomp filter on top of Podman's profile (nested
// user namespaces, keyctl, mount, ptrace, io_uring, ... refused), which
// every process of the container inherits.
func lockdown() error {
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetDumpable, 0, 0); e != 0 {
		return fmt.Errorf("making the init non-dumpable: %w", e)
	}
	if err := seccomp.Install(seccomp.Options{}); err != nil {
		return err
	}
	return nil
}
