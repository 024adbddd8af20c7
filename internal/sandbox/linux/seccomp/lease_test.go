package seccomp

import "testing"

// TestFilterLeases: fcntl F_SETLEASE and F_SETDELEG are refused on both
// architectures, whatever the high bits of the command (the kernel reads
// an unsigned int), while the fcntl commands programs use every day, lease
// queries and unlocks among them, pass.
func TestFilterLeases(t *testing.T) {
	const (
		fSetFD      = 2
		fSetFL      = 4
		fSetLK      = 6
		fSetLKW     = 7
		fGetLease   = 1025
		fNotify     = 1026
		fDupFDCloex = 1030
		fAddSeals   = 1033
		fGetDeleg   = 1024 + 15
		fWRLCK      = 1
		fRDLCK      = 0
	)
	for _, archName := range []string{ArchX8664, ArchAArch64} {
		t.Run(archName, func(t *testing.T) {
			for _, c := range []struct {
				cmd, arg uint64
				want     string
			}{
				{fcntlSetLease, fWRLCK, eperm},
				{fcntlSetLease, fRDLCK, eperm},
				{fcntlSetLease | 1<<32, fWRLCK, eperm},
				{fcntlSetDeleg, 0, eperm},
				{fcntlSetDeleg | 0xffffffff00000000, 0, eperm},
				{fSetFD, 1, allow}, {fSetFL, 0o4000, allow}, {fSetLK, 0, allow}, {fSetLKW, 0, allow},
				{fGetLease, 0, allow}, {fNotify, 0, allow}, {fDupFDCloex, 3, allow}, {fAddSeals, 1, allow},
				{fGetDeleg, 0, allow},
			} {
				if got := evaluate(t, archName, Options{}, call{name: sysFcntl, args: [6]uint64{3, c.cmd, c.arg}}); got != c.want {
					t.Errorf("fcntl(3, %#x, %d): %s, want %s", c.cmd, c.arg, got, c.want)
				}
			}
		})
	}
}
