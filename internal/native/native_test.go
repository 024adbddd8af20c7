package native_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestOnlyNativeEntersHiddenModes: the hidden modes a sandbox re-executes
// the binary in are entered in one place. No package of the module but
// internal/native imports the sandbox inits (the Podman backend excepted:
// it stages its own init's protocol; internal/initmode is the native
// init's one definition, which the separately built init, cmd/airlock-init,
// runs too), so the Go API, the CLI, the test harness and the separate init
// cannot drift apart on which modes exist and what runs in them.
func TestOnlyNativeEntersHiddenModes(t *testing.T) {
	const mod = "github.com/airlockhq/airlock"
	inits := map[string]bool{
		mod + "/internal/sandbox/linux/inside":  true,
		mod + "/internal/sandbox/podman/inside": true,
	}
	allowed := map[string]bool{
		mod + "/internal/native":         true,
		mod + "/internal/initmode":       true,
		mod + "/internal/sandbox/podman": true,
	}
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...")
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		for _, imp := range f[1:] {
			if inits[imp] && !allowed[f[0]] {
				t.Errorf("%s imports %s: enter the hidden modes through internal/native (RunHiddenMode)", f[0], imp)
			}
		}
	}
}
