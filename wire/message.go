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
	// Egress is what http_fetch needs to know of the network grant; nil
	// when the sandbox has no egress proxy.
	Egress *Egress `json:"egress,omitempty"`
	// Search is web_search's provider, from the grant; nil for other tools.
	Search *Search `json:"search,omitempty"`
}

// Search says which search provider web_search asks, and where.
type Search struct {
	// Provider names the provider ("brave", "tavily"; see
	// grant.SearchProviders).
	Provider string `json:"provider"`
	// Endpoint is the provider's https URL (its default, or the grant's).
	Endpoint string `json:"endpoint"`
}

// Egress tells http_fetch how to reach the network and what the grant lets
// it do there. The egress proxy still decides every connection; these let
// the tool refuse plain HTTP and place secrets before a request is sent.
type Egress struct {
	// Proxy is the egress proxy's address as the tool reaches it: the
	// in-sandbox forwarder ("http://127.0.0.1:3128"), or the proxy's Unix
	// socket ("unix:/path") when there is no sandbox. Every request goes
	// through it as a CONNECT tunnel.
	Proxy string `json:"proxy"`
	// PlainHTTP are the host patterns ("name", "*.suffix", an IP literal,
	// each with an optional ":port"; no port means 80 and 443) where
	// http:// may be used.
	PlainHTTP []string `json:"plain_http,omitempty"`
	// Secrets say where each secret in CallContext.Secrets goes: only into
	// its header, only on requests to its hosts.
	Secrets []SecretUse `json:"secret_uses,omitempty"`
}

// SecretUse places one secret: the header Header with the value Format
// (whose "{value}" stands for the secret), sent only to Hosts (patterns as
// in Egress.PlainHTTP). It never holds the secret's value.
type SecretUse struct {
	Name   string   `json:"name"`
	Header string   `json:"header"`
	Format string   `json:"format"`
	Hosts  []string `json:"hosts"`
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
	// Detail is for the audit record only (a provider's error body, say):
	// the broker moves it there and the model never reads it.
	Detail string `json:"detail,omitempty"`
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
	WorkState    string     `json:"work_state,omitempty"`    // background_command: running, exited, stopped or failed
	Limit        Limit      `json:"limit,omitempty"`         // the limit that ended the call, if any
	LimitsHit    []Limit    `json:"limits_hit,omitempty"`    // every limit the call hit, Limit included
	HTTPStatus   int        `json:"http_status,omitempty"`   // http_fetch: the final status
	Isolation    *Isolation `json:"isolation,omitempty"`     // filled by the broker
	// Cost is what the call spent: the tool's own units, and the
	// sandbox's CPU, memory and wall time filled by the broker.
	Cost *Cost `json:"cost,omitempty"`
}

// Cost is what one call (or, summed, a session) spent. Zero fields did not
// apply or were not measured.
type Cost struct {
	Searches     int     `json:"searches,omitempty"`      // search requests sent to a provider
	BytesFetched int64   `json:"bytes_fetched,omitempty"` // response bytes read from the network
	CPUSeconds   float64 `json:"cpu_seconds,omitempty"`   // CPU time of the sandbox's processes
	PeakMemory   int64   `json:"peak_memory_bytes,omitempty"`
	WallSeconds  float64 `json:"wall_seconds,omitempty"` // wall time of the call
}

// Add adds o to c; PeakMemory keeps the larger.
func (c *Cost) Add(o *Cost) {
	if o == nil {
		return
	}
	c.Searches += o.Searches
	c.BytesFetched += o.BytesFetched
	c.CPUSeconds += o.CPUSeconds
	c.PeakMemory = max(c.PeakMemory, o.PeakMemory)
	c.WallSeconds += o.WallSeconds
}

// Isolation reports which isolation actually ran a call.
type Isolation struct {
	Backend string `json:"backend"` // "linux", "unsandboxed", ...
	// Unsandboxed marks a call that ran without isolation (the direct
	// backend): its label says UNSANDBOXED whatever the backend's name.
	Unsandboxed bool     `json:"unsandboxed,omitempty"`
	Features    []string `json:"features"`          // e.g. "userns", "seccomp", "landlock-abi6", "cgroup-v1-memory"
	Missing     []string `json:"missing,omitempty"` // features the backend knows of but could not use
	// Unenforced names limits the call asked for that the host could not
	// enforce ("memory", "processes"), when the grant accepted that.
	Unenforced []Limit `json:"unenforced_limits,omitempty"`
}

// ErrorReport is the JSON a runner writes to stderr when it fails internally.
type ErrorReport struct {
	Code  int    `json:"code"`
	Error string `json:"error"`
}

// String renders a report for logs.
func (r ErrorReport) String() string { return fmt.Sprintf("runner exit %d: %s", r.Code, r.Error) }

// PlaceholderList is the file in a sandbox that lists, one absolute path a
// line, the placeholders the backend holds for missing protected or denied
// names: airlock's, not the user's files. The runner passes them to the
// tools as tool.Env.Hidden. A sandbox without placeholders has no such file.
const PlaceholderList = "/run/airlock/placeholders"

// PlaceholderXattr is the user extended attribute airlock sets on each
// placeholder it makes at a missing protected or denied path (an empty
// file or directory, there only while a call runs), so that any airlock
// process, and the tools in a sandbox, can tell it from the user's own.
const PlaceholderXattr = "user.airlock.placeholder"

// PlaceholderContent is what a file placeholder named name holds: nothing,
// but for a repository's commondir, which git refuses to find empty (it
// dies reading every command in the repository, the host's as well while a
// call holds it): there "." names the repository's own .git, as when the
// file is missing. The host writes it into the placeholders it makes, and
// the init into one it makes itself.
func PlaceholderContent(name string) []byte {
	if name == "commondir" {
		return []byte(".\n")
	}
	return nil
}

// PlaceholderTempPrefix begins the name airlock makes a placeholder under,
// beside its own name, before it is marked and moved there: nobody but
// airlock makes such a name, and tools never show one.
const PlaceholderTempPrefix = ".airlock-placeholder-"

// PlaceholderExcludes is the file in a sandbox that lists the same
// placeholders as git exclude patterns, each anchored at the root of the
// read-write tree it is in, so that git in the sandbox does not take them
// for the user's new files (git add -A). Every sandbox's environment points
// git's core.excludesFile at it (broker.BaseEnv); git ignores it where it
// does not exist.
const PlaceholderExcludes = "/run/airlock/git-exclude"
