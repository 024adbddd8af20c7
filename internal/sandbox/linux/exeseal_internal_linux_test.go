package linux

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The overlay's handle is the file it was asked for, and a file put in its
// place (another inode) is refused, so sealedExe falls back to the copy
// rather than run something else as the init.
func TestSealOverlayChecksTheFile(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.WriteFile(bin, []byte("\x7fELF binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := sealOverlay(bin)
	if err != nil {
		t.Skipf("this broker may not mount an overlay here (the memfd copy is used): %v", err)
	}
	defer f.Close()
	if got := sealKind(f); !strings.Contains(got, "overlay") {
		t.Errorf("sealKind = %q, want the overlay", got)
	}
	other := filepath.Join(dir, "other")
	if err := os.WriteFile(other, []byte("\x7fELF binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := checkSealed(f, other); err == nil || !strings.Contains(err.Error(), "not the airlock binary") {
		t.Errorf("checkSealed against another file: %v, want it refused", err)
	}
	if err := checkSealed(f, bin); err != nil {
		t.Errorf("checkSealed against its own file: %v", err)
	}
}
