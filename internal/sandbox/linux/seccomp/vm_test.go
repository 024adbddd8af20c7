package seccomp

import (
	"encoding/binary"
	"fmt"
)

// This file holds a tiny interpreter for the classic BPF subset Build emits,
// so the filter is tested on any host and for every architecture. We use our
// own rather than golang.org/x/net/bpf's VM because seccomp loads words in
// the machine's byte order (little-endian on both supported architectures)
// while that VM reads packets big-endian: with our own, the test sees struct
// seccomp_data laid out exactly as the kernel does, argument halves included.

// seccompData mirrors struct seccomp_data.
type seccompData struct {
	nr   int32
	arch uint32
	ip   uint64
	args [6]uint64
}

// bytes lays d out as the kernel does on a little-endian machine.
func (d seccompData) bytes() []byte {
	b := make([]byte, 64)
	binary.LittleEndian.PutUint32(b[0:], uint32(d.nr))
	binary.LittleEndian.PutUint32(b[4:], d.arch)
	binary.LittleEndian.PutUint64(b[8:], d.ip)
	for i, a := range d.args {
		binary.LittleEndian.PutUint64(b[16+8*i:], a)
	}
	return b
}

// validate applies the checks the kernel makes before accepting a filter
// (bpf_check_classic and seccomp_check_filter) to the opcodes this package
// uses: only known opcodes, aligned loads inside seccomp_data, jumps that
// land inside the program, and a return as the last instruction.
func validate(prog []Instruction) error {
	if len(prog) == 0 || len(prog) > maxInsns {
		return fmt.Errorf("program has %d instructions", len(prog))
	}
	for pc, in := range prog {
		switch in.Code {
		case opLdAbsW:
			if in.K%4 != 0 || in.K >= 64 {
				return fmt.Errorf("pc %d: load at offset %d outside seccomp_data or unaligned", pc, in.K)
			}
		case opJa:
			if uint64(pc)+1+uint64(in.K) >= uint64(len(prog)) {
				return fmt.Errorf("pc %d: ja %d leaves the program", pc, in.K)
			}
		case opJeqK, opJsetK:
			if pc+1+int(in.Jt) >= len(prog) || pc+1+int(in.Jf) >= len(prog) {
				return fmt.Errorf("pc %d: jump leaves the program", pc)
			}
		case opRetK:
		default:
			return fmt.Errorf("pc %d: opcode %#x not in the emitted subset", pc, in.Code)
		}
	}
	if last := prog[len(prog)-1]; last.Code != opRetK {
		return fmt.Errorf("last instruction %#x is not a return", last.Code)
	}
	return nil
}

// run interprets a validated prog on d and returns the seccomp action.
func run(prog []Instruction, d seccompData) (uint32, error) {
	data := d.bytes()
	var a uint32
	for pc := 0; pc < len(prog); pc++ {
		in := prog[pc]
		switch in.Code {
		case opLdAbsW:
			a = binary.LittleEndian.Uint32(data[in.K:])
		case opJa:
			pc += int(in.K)
		case opJeqK:
			pc += int(jump(a == in.K, in))
		case opJsetK:
			pc += int(jump(a&in.K != 0, in))
		case opRetK:
			return in.K, nil
		default:
			return 0, fmt.Errorf("pc %d: opcode %#x not in the emitted subset", pc, in.Code)
		}
	}
	return 0, fmt.Errorf("fell off the end of the program")
}

// jump returns how far a conditional jump skips.
func jump(taken bool, in Instruction) uint8 {
	if taken {
		return in.Jt
	}
	return in.Jf
}
