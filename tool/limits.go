package tool

import "time"

// Defaults for the limits a tool enforces itself when Env.Limits leaves them zero.
const (
	defaultOutputBytes = 1 << 20
	defaultFileBytes   = 64 << 20
	defaultTimeout     = 120 * time.Second
)

// DefaultShellTimeout is the shell tool's timeout when a call names none
// (never more than the call's time limit).
const DefaultShellTimeout = defaultTimeout

// ShellKillFactor is how many times its output cap a shell command may
// write before it is killed.
const ShellKillFactor = 8

// outputCap is the cap on a result's Content.
func outputCap(env Env) int {
	if n := env.Limits.OutputBytes; n > 0 && n <= 1<<30 { // the grant's most: limits.output up to 1 GiB
		return int(n)
	}
	return defaultOutputBytes
}

// fileCap is the largest file write_file and edit_file write.
func fileCap(env Env) int64 {
	if n := env.Limits.FileBytes; n > 0 {
		return n
	}
	return defaultFileBytes
}
