//go:build !unix

package direct

import (
	"os"
	"os/exec"
)

func setProcAttr(*exec.Cmd) {}

func killGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}

// termGroup kills the child: there is no SIGTERM here.
func termGroup(cmd *exec.Cmd) { killGroup(cmd) }

func signalOf(*os.ProcessState) int { return 0 }
