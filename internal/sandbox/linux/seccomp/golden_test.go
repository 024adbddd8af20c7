package seccomp

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite testdata/*.bpf listings")

// disassemble prints prog one instruction a line, with jump targets as
// absolute positions and syscall numbers named, so a reviewer can read the
// filter and a change to it shows as a diff.
func disassemble(prog []Instruction, sysnum map[string]uint32) string {
	names := make(map[uint32]string, len(sysnum))
	for name, n := range sysnum {
		names[n] = name
	}
	var b strings.Builder
	loaded := uint32(offArch) // offset of the word in A
	for pc, in := range prog {
		fmt.Fprintf(&b, "%3d  ", pc)
		switch in.Code {
		case opLdAbsW:
			loaded = in.K
			field := map[uint32]string{offNr: "nr", offArch: "arch"}[in.K]
			if in.K >= offArgs {
				field = fmt.Sprintf("args[%d].lo", (in.K-offArgs)/8)
				if (in.K-offArgs)%8 != 0 {
					field = fmt.Sprintf("args[%d].hi", (in.K-offArgs)/8)
				}
			}
			fmt.Fprintf(&b, "ld   %s\n", field)
		case opJeqK, opJsetK:
			op := map[uint16]string{opJeqK: "jeq ", opJsetK: "jset"}[in.Code]
			fmt.Fprintf(&b, "%s %#x, %d, %d", op, in.K, pc+1+int(in.Jt), pc+1+int(in.Jf))
			if name, ok := names[in.K]; ok && in.Code == opJeqK && loaded == offNr {
				fmt.Fprintf(&b, "  ; %s", name)
			}
			b.WriteString("\n")
		case opRetK:
			fmt.Fprintf(&b, "ret  %s\n", action(in.K))
		default:
			fmt.Fprintf(&b, "%#04x %d %d %#x\n", in.Code, in.Jt, in.Jf, in.K)
		}
	}
	return b.String()
}

func TestGoldenListing(t *testing.T) {
	for archName, a := range arches {
		t.Run(archName, func(t *testing.T) {
			prog, err := Build(archName, Options{})
			if err != nil {
				t.Fatal(err)
			}
			got := disassemble(prog, a.sysnum)
			path := filepath.Join("testdata", archName+".bpf")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("reading %q (run with -update to create it): %v", path, err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("%s listing changed (-want +got); if intended, run with -update:\n%s", archName, diff)
			}
		})
	}
}
