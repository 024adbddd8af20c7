package wire

import (
	"encoding/json"
	"fmt"
)

// ToolInput is the one frame the runner reads from stdin.
type ToolInput struct {
	Tool    string          `json:"tool"`
	Args    json.RawMessage `json:"args"`
	Context CallContext     `json:"context"`
}

// CallContext carries what the runner needs besides the tool's own arguments.
// Secrets travel only here, only for the tools and hosts the grant names.
type CallContext struct {
	CallID  string            `json:"call_id"`
	Session string            `json:"session,omitempty"`
	Secrets map[string]string `json:"secrets,omitempty"`
	// Root is the directory file tools resolve paths beneath ("/" inside a
	// sandbox, whose mounts already hold only the grant).
	Root string `json:"root,omitempty"`
	// Cwd is the directory relative paths and shell commands start in.
	Cwd string `json:"cwd,omitempty"`
	// Limits are the per-call limits the tool enforces itself.
	Limits ToolLimits `json:"limits,omitempty"`
}

// ToolLimits are the limits a tool enforces on its own output and work; the
// sandbox enforces the rest (time, memory, processes).
type ToolLimits struct {
	OutputBytes int64 `json:"output_bytes,omitempty"` // cap on Content; 0 = the tool's default
	FileBytes   int64 `json:"file_bytes,omitempty"`   // cap on a file read_file/grep will read; 0 = default
	TimeoutMS   int64 `json:"timeout_ms,omitempty"`   // wall time for shell commands; 0 = default
}

// ToolOutput is the one frame the runner writes to stdout when it completes,
// including when the tool failed in a way the model should read (IsError).
type ToolOutput struct {
	// Content is what the model reads.
	Content string `json:"content"`
	// IsError marks a tool-level failure (no such file, a refused argument).
	IsError bool `json:"is_error,omitempty"`
	// Truncated reports that Content was cut at a cap; Meta.OmittedBytes says how much.
	Truncated bool `json:"truncated,omitempty"`
	// Meta is structured data about the call for clients and the audit log.
	Meta Meta `json:"meta,omitzero"`
}

// Meta is structured data about a completed call. Fields that do not apply
// to a tool are left zero.
type Meta struct {
	ExitCode     *int       `json:"exit_code,omitempty"`     // shell: the command's exit status
	Signal       int        `json:"signal,omitempty"`        // shell: the signal that ended the command
	OmittedBytes int64      `json:"omitted_bytes,omitempty"` // bytes cut from Content
	Bytes        int64      `json:"bytes,omitempty"`         // bytes read or written
	Count        int        `json:"count,omitempty"`         // matches, files or lines returned
	WorkID       string     `json:"work_id,omitempty"`       // background work started by the call
	Limit        string     `json:"limit,omitempty"`         // the limit that ended the call, if any
	HTTPStatus   int        `json:"http_status,omitempty"`   // http_fetch: the final status
	Isolation    *Isolation `json:"isolation,omitempty"`     // filled by the broker
}

// Isolation reports which isolation actually ran a call.
type Isolation struct {
	Backend  string   `json:"backend"`           // "linux", "unsandboxed", ...
	Features []string `json:"features"`          // e.g. "userns", "seccomp", "landlock-abi6", "cgroup-v1-memory"
	Missing  []string `json:"missing,omitempty"` // features the backend knows of but could not use
}

// ErrorReport is the JSON a runner writes to stderr when it fails internally.
type ErrorReport struct {
	Code  int    `json:"code"`
	Error string `json:"error"`
}

// String renders a report for logs.
func (r ErrorReport) String() string { return fmt.Sprintf("runner exit %d: %s", r.Code, r.Error) }
