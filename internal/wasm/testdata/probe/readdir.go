package main

import (
	"encoding/json"
	"fmt"
	"os"
	"unsafe"

	"github.com/airlockhq/airlock/capsule/guest"
)

//go:wasmimport wasi_snapshot_preview1 fd_readdir
func fdReaddir(fd int32, buf unsafe.Pointer, bufLen uint32, cookie uint64, used unsafe.Pointer) int32

// readdirbuf DIR K TOOL [LEN]: opens DIR K times, keeping each open, and
// calls fd_readdir on each with a buffer length far past the module's
// memory (the buffer itself small), or with a real buffer of LEN bytes,
// then calls TOOL, which sees the host as the open listings leave it.
func readdirbuf(args []string) {
	var k int
	fmt.Sscan(args[1], &k)
	var keep []*os.File
	buf := make([]byte, 64)
	bufLen := uint32(0xFFFF0000)
	if len(args) > 3 {
		fmt.Sscan(args[3], &bufLen)
		buf = make([]byte, bufLen)
	}
	var used uint32
	errs := map[int32]int{}
	for range k {
		f, err := os.Open(args[0])
		if err != nil {
			fmt.Println("err", err)
			return
		}
		keep = append(keep, f)
		errs[fdReaddir(int32(f.Fd()), unsafe.Pointer(&buf[0]), bufLen, 0, unsafe.Pointer(&used))]++
	}
	fmt.Println("readdir", errs)
	out, err := guest.Call(args[2], json.RawMessage(`{}`))
	if err != nil {
		fmt.Println("err", err)
		return
	}
	fmt.Println("tool", out.Content)
	for _, f := range keep {
		f.Close()
	}
}
