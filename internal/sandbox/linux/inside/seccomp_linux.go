package inside

import "github.com/airlockhq/airlock/internal/sandbox/linux/seccomp"

// installSeccomp installs the sandbox's seccomp filter on every thread
// (TSYNC). It reports whether a filter was installed.
func installSeccomp() (bool, error) {
	if err := seccomp.Install(seccomp.Options{}); err != nil {
		return false, err
	}
	return true, nil
}
