package wire

import "strings"

// Limit names a resource limit, as ToolOutput's Meta.Limit and
// Meta.LimitsHit, the sandbox's Result, the audit record's limits_hit and a
// backend's enforcement report use it. Each limit has one spelling.
type Limit string

// The limits.
const (
	LimitTime      Limit = "time"      // wall time: the sandbox's deadline, or shell's own timeout
	LimitMemory    Limit = "memory"    // memory, tmpfs pages included
	LimitProcesses Limit = "processes" // processes and threads
	LimitOutput    Limit = "output"    // bytes of stdout (and, separately, stderr)
	LimitFileSize  Limit = "file_size" // RLIMIT_FSIZE
	LimitTmp       Limit = "tmp"       // size of the private /tmp
	// LimitDisk: the call drove a file system it may write below the free
	// space the host keeps (see the Linux backend's disk guard).
	LimitDisk Limit = "disk"
)

// limitTimeout is how shell spelled its own time-out in Meta.Limit before
// LimitTime was the one spelling; it is still read, as LimitTime.
const limitTimeout = "timeout"

// UnmarshalText reads a limit's name, and the old spelling "timeout" as
// LimitTime, so output from an older runner or remote hands reads the same.
// Other names are kept as they are: a newer peer may name a limit this side
// does not know.
func (l *Limit) UnmarshalText(b []byte) error {
	if string(b) == limitTimeout {
		*l = LimitTime
		return nil
	}
	*l = Limit(b)
	return nil
}

// Class is the outcome class of a call, as the broker records it in the
// audit log and reports it to callers (the Go API's Result.Class, the MCP
// _meta "class"). Each class has one spelling.
type Class string

// The outcome classes.
const (
	ClassOK        Class = "ok"        // the runner wrote a ToolOutput (which may be a tool-level failure)
	ClassTimeout   Class = "timeout"   // the wall-time limit (LimitTime) ended it
	ClassMemory    Class = "memory"    // the memory limit ended it
	ClassProcesses Class = "processes" // the process limit ended it
	ClassOutput    Class = "output"    // the output cap ended it
	ClassKilled    Class = "killed"    // a signal ended it
	ClassCancelled Class = "cancelled" // the caller cancelled it
	ClassRunner    Class = "runner"    // the runner exited with a failure code
	ClassSandbox   Class = "sandbox"   // the sandbox could not be built
	ClassRefused   Class = "refused"   // the grant or admission control refused it; nothing ran
	ClassLost      Class = "lost"      // the sandbox was lost with the call in it; the outcome is unknown
	// ClassInterrupted is written by audit recovery for a call or session
	// whose broker ended before it recorded an outcome.
	ClassInterrupted Class = "interrupted"
	// ClassUnavailable is the MCP server's class for a call that never
	// reached the broker: the server is shutting down, or the session could
	// not be opened or has failed. It is in _meta and /metrics.
	ClassUnavailable Class = "unavailable"
	// ClassBusy is the MCP server's /metrics class of a call the broker
	// refused because its session had every slot running and its queue
	// full (_meta and the audit record keep ClassRefused, rule "admission").
	ClassBusy Class = "busy"
)

// JoinLimits joins the names of ls with sep, for a sentence or a header.
func JoinLimits(ls []Limit, sep string) string {
	var b strings.Builder
	for i, l := range ls {
		if i > 0 {
			b.WriteString(sep)
		}
		b.WriteString(string(l))
	}
	return b.String()
}
