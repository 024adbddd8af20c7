// Package initmode is the native sandbox's init mode: what a process
// started as a sandbox's init (initproto.Arg) runs. The airlock binary
// enters it through internal/native and the separately built init
// (cmd/airlock-init) directly, from this one definition, so the two cannot
// differ in what runs inside a sandbox.
package initmode

import (
	"github.com/airlockhq/airlock/internal/runner"
	"github.com/airlockhq/airlock/internal/sandbox/linux/inside"
)

// Main runs the process as a native sandbox's init, with airlock's tools
// in-process, and returns its exit code.
func Main() int {
	return inside.Main(inside.Tool{Run: runner.RunStarting, Warm: runner.Warm})
}
