package wire

// Runner exit codes: the one definition shared by the runner, which exits with
// them, and the broker, which classifies them. A kill by signal and a time-out
// are not exit codes; the broker classifies those from the process state.
const (
	// ExitOK: a ToolOutput frame was written (including a tool-level failure).
	ExitOK = 0
	// ExitUsage: the runner was started with bad command-line arguments.
	ExitUsage = 64
	// ExitBadInput: the input frame or its JSON did not parse.
	ExitBadInput = 65
	// ExitUnknownTool: the input named a tool the runner does not have.
	ExitUnknownTool = 66
	// ExitBadArgs: the tool's arguments were refused by its strict parser.
	ExitBadArgs = 67
	// ExitLimitSetup: a resource limit could not be applied.
	ExitLimitSetup = 68
	// ExitSandboxSetup: the sandbox could not be built around the runner.
	ExitSandboxSetup = 69
	// ExitInternal: the tool failed internally; an ErrorReport is on stderr.
	ExitInternal = 70
	// ExitWriteOutput: the output frame could not be written.
	ExitWriteOutput = 74
)

// ExitName names an exit code for logs and audit records.
func ExitName(code int) string {
	switch code {
	case ExitOK:
		return "ok"
	case ExitUsage:
		return "bad-cli-args"
	case ExitBadInput:
		return "bad-input"
	case ExitUnknownTool:
		return "unknown-tool"
	case ExitBadArgs:
		return "bad-args"
	case ExitLimitSetup:
		return "limit-setup-failed"
	case ExitSandboxSetup:
		return "sandbox-setup-failed"
	case ExitInternal:
		return "internal-error"
	case ExitWriteOutput:
		return "output-write-failed"
	}
	return "unknown-exit"
}
