package inside

// installSeccomp installs the sandbox's seccomp filter on every thread. It
// reports false when this build has no filter yet.
func installSeccomp() (bool, error) { return false, nil }
