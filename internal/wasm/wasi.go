package wasm

import (
	"context"

	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
)

// errnoNotsup is WASI preview 1's ENOTSUP ("notsup"), the errno wazero
// also gives a preopen moved by fd_renumber.
const errnoNotsup = 58

// instantiateWASI instantiates wazero's WASI preview 1 with fd_renumber
// refused (ENOTSUP). wazero keeps a run's descriptors in a table indexed
// by number on the broker's heap and grew it to fd_renumber's target: one
// call moving a file to descriptor 2^27 held a gigabyte of the broker's
// memory, past the module's memory limit and every other bound, and 2^31
// sixteen (TestRenumberCannotGrowTheHostsTable). Its implementation is not
// reachable to be bounded, so the call is refused whatever its target.
// Go's standard library never calls it; a C or Rust program does only for
// an explicit dup2-style move.
func instantiateWASI(ctx context.Context, rt wazero.Runtime) error {
	b := rt.NewHostModuleBuilder(wasi_snapshot_preview1.ModuleName)
	wasi_snapshot_preview1.NewFunctionExporter().ExportFunctions(b)
	// A later export of a name replaces wazero's.
	i32 := api.ValueTypeI32
	b.NewFunctionBuilder().WithGoModuleFunction(api.GoModuleFunc(refuseRenumber), []api.ValueType{i32, i32}, []api.ValueType{i32}).
		WithParameterNames("fd", "to").Export("fd_renumber")
	_, err := b.Instantiate(ctx)
	return err
}

func refuseRenumber(_ context.Context, _ api.Module, stack []uint64) {
	stack[0] = errnoNotsup
}
