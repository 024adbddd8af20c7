// Command airlock-init is the init of airlock's native sandboxes, built
// apart from airlock: it holds only what runs inside a sandbox (the init
// and the tools), not the MCP server, the grant parser, the WebAssembly
// runtime and the rest, so each sandbox starts a smaller binary with less
// package initialisation. airlock starts it as a sandbox's init when it
// lies next to the airlock binary and is of the same build (see
// linux.InitCommand); `airlock doctor` says which init sandboxes use.
// Install both from one build, this one without cgo (a static binary that
// runs no dynamic loader and makes its all-threads calls through the Go
// runtime; airlock's spawner locks each init down before its exec, see
// package linux's spawnInit):
//
//	go install ./cmd/airlock && CGO_ENABLED=0 go install ./cmd/airlock-init
//
// It is not meant to be run by hand.
package main

import (
	"fmt"
	"os"

	"github.com/airlockhq/airlock/internal/initmode"
	"github.com/airlockhq/airlock/internal/sandbox/linux/initproto"
)

func main() {
	if len(os.Args) < 2 || os.Args[1] != initproto.Arg {
		fmt.Fprintln(os.Stderr, "airlock-init is the init airlock starts in each sandbox; it is not run by hand (see airlock help)")
		os.Exit(2)
	}
	os.Exit(initmode.Main())
}
