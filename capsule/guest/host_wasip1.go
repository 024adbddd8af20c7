//go:build wasip1

package guest

import (
	"fmt"
	"runtime"
	"unsafe"
)

//go:wasmimport airlock call
func hostCall(toolPtr unsafe.Pointer, toolLen uint32, argsPtr unsafe.Pointer, argsLen uint32) int64

//go:wasmimport airlock result
func hostResult(bufPtr unsafe.Pointer, bufLen uint32) int32

func call(tool string, args []byte) ([]byte, error) {
	name := []byte(tool)
	var np, ap unsafe.Pointer
	if len(name) > 0 {
		np = unsafe.Pointer(&name[0])
	}
	if len(args) > 0 {
		ap = unsafe.Pointer(&args[0])
	}
	n := hostCall(np, uint32(len(name)), ap, uint32(len(args)))
	runtime.KeepAlive(name)
	runtime.KeepAlive(args)
	if n < 0 {
		return nil, codeError(tool, n)
	}
	buf := make([]byte, n)
	var bp unsafe.Pointer
	if n > 0 {
		bp = unsafe.Pointer(&buf[0])
	}
	got := hostResult(bp, uint32(n))
	if got < 0 {
		return nil, codeError(tool, int64(got))
	}
	return buf[:got], nil
}

// codeError turns a negative host code into an error.
func codeError(tool string, code int64) error {
	switch code {
	case -1:
		return fmt.Errorf("guest: calling %s: a buffer outside the module's memory", tool)
	case -2:
		return fmt.Errorf("guest: calling %q: not a tool name (1 to 64 bytes of UTF-8)", tool)
	case -3:
		return fmt.Errorf("guest: calling %s: the arguments are larger than 16 MiB", tool)
	case -4:
		return fmt.Errorf("guest: calling %s: the host holds no result", tool)
	}
	return fmt.Errorf("guest: calling %s: host error %d", tool, code)
}
