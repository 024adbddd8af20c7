//go:build wasip1

package guest

import (
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
