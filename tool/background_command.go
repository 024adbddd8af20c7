package tool

import (
	"context"
	"fmt"

	"github.com/airlockhq/airlock/wire"
)

const backgroundCommandDescription = `Checks, waits for or stops background work started by shell with run_in_background; work_id is the id shell returned ("wrk_" and 16 hex digits).
operation "status" answers at once; "wait" waits until the work ends or wait_secs pass (default and maximum 600, never past the call's time limit; 0 answers at once, as status does); "stop" sends SIGTERM to every process of the work's sandbox, SIGKILL after a 2 s grace, and answers once they are gone (or, if they have not gone 3 s after the SIGKILL, answers with the state they are in).
Each answer gives the state (running, exited, stopped, or failed when the sandbox could not start), the exit code once there is one, seconds since the start (and seconds waited), the last 16 KiB of stdout and stderr interleaved, the total output size, and the path of the log file that holds all of it. A limit that ended the work (time, memory, processes, output) is named, and so is any other limit it hit.
Limits: only work started in this session, and of the work that ended only the latest 1024. The work runs under the shell tool's limits except the wall time, which is the session's (24 h by default); writing more than 8 times the output cap to stdout or to stderr stops it. The log file is capped (64 MiB by default) and the answer says when it was; the session keeps only its latest ended works' logs (256 MiB of them by default), and says when an older one's was removed. Closing the session kills all of its background work.`

// MaxWaitSeconds is the longest (and the default) wait of background_command.
const MaxWaitSeconds = 600

// Operations of background_command.
const (
	OpStatus = "status"
	OpWait   = "wait"
	OpStop   = "stop"
)

// BackgroundCommandArgs are background_command's arguments.
type BackgroundCommandArgs struct {
	Operation string `json:"operation" desc:"status, wait or stop" enum:"status,wait,stop"`
	WorkID    string `json:"work_id" desc:"the work id shell returned for run_in_background (wrk_ and 16 hex digits)"`
	// WaitSecs is nil when absent (the default wait); 0 answers at once.
	WaitSecs *int `json:"wait_secs,omitempty" desc:"for wait: seconds to wait for the work to end, 0 to answer at once (default and maximum 600)" min:"0" max:"600"`
}

func (a *BackgroundCommandArgs) validate() error {
	switch a.Operation {
	case OpStatus, OpWait, OpStop:
	default:
		return fmt.Errorf("field %q: must be %q, %q or %q, got %q", "operation", OpStatus, OpWait, OpStop, a.Operation)
	}
	if !ValidWorkID(a.WorkID) {
		return fmt.Errorf("field %q: must be \"wrk_\" and 16 lower-case hex digits, got %q", "work_id", a.WorkID)
	}
	if a.WaitSecs == nil {
		return nil
	}
	switch n := *a.WaitSecs; {
	case n < 0:
		return fmt.Errorf("field %q: must not be negative, got %d", "wait_secs", n)
	case n > MaxWaitSeconds:
		return fmt.Errorf("field %q: must be at most %d seconds, got %d", "wait_secs", MaxWaitSeconds, n)
	case a.Operation != OpWait:
		return fmt.Errorf("field %q: applies only to operation %q, got operation %q", "wait_secs", OpWait, a.Operation)
	}
	return nil
}

// Access is empty: background_command reads the broker's state, not files.
func (a BackgroundCommandArgs) Access() Access { return Access{} }

// ValidWorkID reports whether id has the form of a work id: "wrk_" and 16
// lower-case hex digits.
func ValidWorkID(id string) bool {
	const prefix = "wrk_"
	if len(id) != len(prefix)+16 || id[:len(prefix)] != prefix {
		return false
	}
	for _, c := range id[len(prefix):] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

var backgroundCommand = func() *Def {
	d := define("background_command", backgroundCommandDescription, runBackgroundCommand)
	d.Broker = true
	return d
}()

// runBackgroundCommand fails: background work belongs to the broker, which
// answers this tool itself.
func runBackgroundCommand(context.Context, Env, BackgroundCommandArgs) wire.ToolOutput {
	return Failure("background_command is answered by the broker that owns the background work; it cannot run inside a sandbox")
}
