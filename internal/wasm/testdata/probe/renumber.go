package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/airlockhq/airlock/capsule/guest"
)

//go:wasmimport wasi_snapshot_preview1 fd_renumber
func fdRenumber(from, to int32) int32

// renumber PATH TO TOOL: opens PATH and moves its descriptor to TO with
// fd_renumber (dup2's WASI form), then calls TOOL, which sees the host
// as the renumbered descriptor table leaves it.
func renumber(args []string) {
	f, err := os.Open(args[0])
	if err != nil {
		fmt.Println("err", err)
		return
	}
	var to int32
	fmt.Sscan(args[1], &to)
	fmt.Println("renumber", fdRenumber(int32(f.Fd()), to))
	out, err := guest.Call(args[2], json.RawMessage(`{}`))
	if err != nil {
		fmt.Println("err", err)
		return
	}
	fmt.Println("tool", out.Content)
}
