package seccomp

import (
	"fmt"
	"os"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// setModeFilter calls seccomp(SECCOMP_SET_MODE_FILTER, flags, prog). With
// SECCOMP_FILTER_FLAG_TSYNC a positive return value is the id of a thread
// that could not be synchronised.
func setModeFilter(prog []Instruction, flags uintptr) error {
	if len(prog) == 0 || len(prog) > maxInsns {
		return fmt.Errorf("program has %d instructions, want 1..%d", len(prog), maxInsns)
	}
	filters := make([]unix.SockFilter, len(prog))
	for i, in := range prog {
		filters[i] = unix.SockFilter{Code: in.Code, Jt: in.Jt, Jf: in.Jf, K: in.K}
	}
	fprog := unix.SockFprog{Len: uint16(len(filters)), Filter: &filters[0]}
	r, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, flags, uintptr(unsafe.Pointer(&fprog)))
	runtime.KeepAlive(filters)
	if e != 0 {
		return os.NewSyscallError("seccomp", e)
	}
	if r != 0 {
		return fmt.Errorf("thread %d could not be synchronised with the filter", r)
	}
	return nil
}
