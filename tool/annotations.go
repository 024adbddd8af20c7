package tool

// Hints say what a tool does to the world around it, for clients that decide
// from them what to confirm with the user: they are MCP's tool annotations
// (readOnlyHint, destructiveHint, idempotentHint, openWorldHint) and title.
// Every hint is stated for every tool, never left to a protocol default.
type Hints struct {
	// Title is a short human-readable name for the tool.
	Title string
	// ReadOnly tools change nothing: not files, not processes, not remote state.
	ReadOnly bool
	// Destructive tools may delete or overwrite what was there (not only add).
	Destructive bool
	// Idempotent tools have no further effect when called again with the
	// same arguments, so a call lost with its connection may be retried.
	Idempotent bool
	// OpenWorld tools may reach entities outside the granted files: the
	// network hosts the grant allows.
	OpenWorld bool
}

// hints is the one table of every tool's hints, by tool name.
var hints = map[string]Hints{
	"read_file": {Title: "Read file", ReadOnly: true, Idempotent: true},
	"glob":      {Title: "Find files by pattern", ReadOnly: true, Idempotent: true},
	"grep":      {Title: "Search file contents", ReadOnly: true, Idempotent: true},
	// Writing the same content to the same path again leaves the same file.
	"write_file": {Title: "Write file", Destructive: true, Idempotent: true},
	// A second identical edit fails or, when new_string holds old_string, edits again.
	"edit_file": {Title: "Edit file", Destructive: true},
	// A command may do anything the grant allows, including reaching its hosts.
	"shell": {Title: "Run shell command", Destructive: true, OpenWorld: true},
	// stop kills the work's processes; status and wait change nothing, and
	// stopping work twice stops it once.
	"background_command": {Title: "Check, wait for or stop background work", Destructive: true, Idempotent: true},
	// GET and HEAD only: safe and idempotent by HTTP's rules, but remote.
	"http_fetch": {Title: "Fetch URL", ReadOnly: true, Idempotent: true, OpenWorld: true},
	// A search reads the provider's index; repeating it only spends a search.
	"web_search": {Title: "Search the web", ReadOnly: true, Idempotent: true, OpenWorld: true},
}
