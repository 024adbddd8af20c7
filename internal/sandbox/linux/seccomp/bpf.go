package seccomp

import "fmt"

// An Instruction is one classic BPF instruction, laid out like the kernel's
// struct sock_filter so a program can be handed to seccomp(2) as is.
type Instruction struct {
	Code uint16 // opcode: class | size | mode, or class | op | source
	Jt   uint8  // instructions to skip when a conditional jump is taken
	Jf   uint8  // instructions to skip when it is not
	K    uint32 // the constant operand
}

// Classic BPF opcodes, only the subset this package emits (see
// linux/filter.h and linux/bpf_common.h).
const (
	opLdAbsW  = 0x20 // BPF_LD(0x00) | BPF_W(0x00) | BPF_ABS(0x20): A = u32 at offset K
	opJa      = 0x05 // BPF_JMP(0x05) | BPF_JA(0x00): skip K
	opJeqK    = 0x15 // BPF_JMP(0x05) | BPF_JEQ(0x10) | BPF_K(0x00): A == K
	opJsetK   = 0x45 // BPF_JMP(0x05) | BPF_JSET(0x40) | BPF_K(0x00): A & K != 0
	opRetK    = 0x06 // BPF_RET(0x06) | BPF_K(0x00): return K
	maxInsns  = 4096 // BPF_MAXINSNS
	maxOffset = 255  // a conditional jump skips at most 255 instructions
)

// assembler builds a program with symbolic forward jump targets, the only
// kind of jump classic BPF has.
type assembler struct {
	prog   []Instruction
	labels map[string]int
	fixups []fixup
}

// A fixup remembers a jump whose targets are resolved at the end.
type fixup struct {
	at     int
	jt, jf string
}

// load emits A = the 32-bit word at offset off of struct seccomp_data.
func (a *assembler) load(off uint32) {
	a.prog = append(a.prog, Instruction{Code: opLdAbsW, K: off})
}

// ret emits return k.
func (a *assembler) ret(k uint32) {
	a.prog = append(a.prog, Instruction{Code: opRetK, K: k})
}

// jump emits a conditional jump to label jt when the test holds and to label
// jf when it does not; an empty label means the next instruction.
func (a *assembler) jump(code uint16, k uint32, jt, jf string) {
	a.fixups = append(a.fixups, fixup{at: len(a.prog), jt: jt, jf: jf})
	a.prog = append(a.prog, Instruction{Code: code, K: k})
}

// label names the position of the next instruction.
func (a *assembler) label(name string) {
	if a.labels == nil {
		a.labels = make(map[string]int)
	}
	a.labels[name] = len(a.prog)
}

// assemble resolves every jump and returns the finished program.
func (a *assembler) assemble() ([]Instruction, error) {
	for _, f := range a.fixups {
		jt, err := a.offset(f.at, f.jt)
		if err != nil {
			return nil, err
		}
		jf, err := a.offset(f.at, f.jf)
		if err != nil {
			return nil, err
		}
		a.prog[f.at].Jt, a.prog[f.at].Jf = jt, jf
	}
	if len(a.prog) > maxInsns {
		return nil, fmt.Errorf("program has %d instructions, the kernel takes at most %d", len(a.prog), maxInsns)
	}
	return a.prog, nil
}

// offset returns how many instructions a jump at position at skips to reach
// label.
func (a *assembler) offset(at int, label string) (uint8, error) {
	if label == "" {
		return 0, nil
	}
	to, ok := a.labels[label]
	if !ok {
		return 0, fmt.Errorf("jump at %d to undefined label %q", at, label)
	}
	skip := to - at - 1
	if skip < 0 || skip > maxOffset {
		return 0, fmt.Errorf("jump at %d to label %q skips %d instructions, want 0..%d", at, label, skip, maxOffset)
	}
	return uint8(skip), nil
}
