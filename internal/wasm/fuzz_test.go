package wasm

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"testing"

	"github.com/airlockhq/airlock/internal/wasm/wasmtest"
	"github.com/airlockhq/airlock/wire"
	"github.com/tetratelabs/wazero"
)

// FuzzHostCall hands the airlock host module any pointers, lengths and
// memory contents a hostile module could, through a real module (see
// wasmtest.HostCaller): the host must never crash, and must answer with a
// result length or one of its error codes.
func FuzzHostCall(f *testing.F) {
	seed := func(tp, tl, ap, al, bp, bl uint32, mem []byte) {
		b := make([]byte, 24, 24+len(mem))
		for i, v := range []uint32{tp, tl, ap, al, bp, bl} {
			binary.LittleEndian.PutUint32(b[i*4:], v)
		}
		f.Add(append(b, mem...))
	}
	seed(0, 9, 16, 2, 1024, 4096, []byte("read_file\x00\x00\x00\x00\x00\x00\x00{}"))
	seed(0, 9, 16, 12, 1024, 4096, []byte("read_file\x00\x00\x00\x00\x00\x00\x00{\"path\":\"x\"}"))
	seed(0, 0, 0, 0, 0, 0, nil)
	seed(65530, 100, 0, 0, 0, 0, nil)
	seed(0, 4, 0xfffffff0, 0x20, 0, 10, []byte("grep"))
	seed(0, 4, 0, 0xffffffff, 0, 10, []byte("grep"))
	seed(0, 2, 0, 2, 65535, 0xffffffff, []byte("\xff\xfe"))
	seed(0, 64, 0, 65536, 65536, 1, nil)

	ctx := context.Background()
	e, err := NewEngine(ctx)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { e.Close(ctx) })
	compiled, err := e.rt.CompileModule(ctx, wasmtest.HostCaller())
	if err != nil {
		f.Fatal(err)
	}
	tools := func(_ context.Context, name string, args json.RawMessage) wire.ToolOutput {
		return wire.ToolOutput{Content: name + string(args)}
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) < 24 {
			return
		}
		var p [6]uint64
		for i := range p {
			p[i] = uint64(binary.LittleEndian.Uint32(in[i*4:]))
		}
		ctx := withHost(ctx, &hostState{tools: tools})
		mod, err := e.rt.InstantiateModule(ctx, compiled, wazero.NewModuleConfig().WithName("").WithStartFunctions())
		if err != nil {
			t.Fatal(err)
		}
		defer mod.Close(ctx)
		mem := in[24:]
		if len(mem) > int(mod.Memory().Size()) {
			mem = mem[:mod.Memory().Size()]
		}
		mod.Memory().Write(0, mem)
		res, err := mod.ExportedFunction("go").Call(ctx, p[:]...)
		if err != nil {
			t.Fatalf("the host failed on %v: %v", p, err)
		}
		switch r := int64(res[0]); {
		case r >= 0, r == ErrFault, r == ErrBadName, r == ErrTooLarge:
		default:
			t.Fatalf("call returned %d for %v", r, p)
		}
	})
}
