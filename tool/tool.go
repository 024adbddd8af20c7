// Package tool holds the tools an agent calls: one file per tool with its
// argument struct, JSON schema, description and Run. The broker uses Parse and
// Access to check a call against a grant before any sandbox exists; the runner
// uses Parse and Run inside the sandbox. Both share the same argument structs,
// so the two sides cannot disagree about what a call means.
//
// A tool's failure that the model should read (no such file, a refused
// argument) is a ToolOutput with IsError set, never a Go error.
package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/airlockhq/airlock/wire"
)

// Env is where a tool runs.
type Env struct {
	// Root is the directory beneath which every path resolves. Paths that
	// would leave it, lexically or through a symlink, are refused.
	Root string
	// Cwd is the directory relative paths start from; it lies within Root.
	Cwd string
	// Limits caps the tool's output and work.
	Limits wire.ToolLimits
	// Secrets are the values the grant gives this call, by name.
	Secrets map[string]string
	// Egress is how http_fetch reaches the network; nil means no network.
	Egress *wire.Egress
	// Search is web_search's provider and endpoint; nil when the grant
	// configures none.
	Search *wire.Search
	// Hidden are absolute paths that are the sandbox's placeholders for
	// missing protected or denied names, not the user's files: read_file
	// treats them as missing and glob and grep never list them.
	Hidden []string
	// Candidates are the absolute paths where airlock may make a
	// placeholder while the call runs (the grant's denied and protected
	// paths, and the directories above them in a tree), and
	// IsPlaceholder, when set, says whether one of them is a placeholder
	// now: another call's hold can make one after Hidden was listed. A
	// placeholder is marked before its name appears, so a tool that asks
	// when it meets the name never shows one.
	Candidates    map[string]bool
	IsPlaceholder func(path string) bool
	// Start, when set, is how a tool starts the command it runs (the shell
	// tool's /bin/sh): it calls start, which starts the command, where it
	// chooses. The native sandbox's init starts it in the cgroup of the
	// call's own processes, so the call's process limit counts the
	// command's processes and not the init's threads. Nil: start is called
	// as it is. An error means the command must not run: a command start
	// started is stopped.
	Start func(start func() error) error
	// CallID is the call's id (wire.CallContext.CallID). write_file and
	// edit_file put it in the name of a temporary file they make (see
	// internal/writetmp), so airlock can remove one a killed call left.
	CallID string
}

// hidden reports whether the absolute path p is one of env.Hidden, or,
// in a sandbox that marks placeholders (Env.IsPlaceholder), a candidate
// that is one now or a placeholder still being made under its temporary
// name (wire.PlaceholderTempPrefix), unmarked for a moment. Anything can
// be named so, the sandbox's own files too: a name of that form is hidden
// only while it holds what a placeholder does (placeholderShaped: nothing,
// or a commondir's two bytes), so no file with something of its own in it
// is kept from the model's sight by its name.
func (e Env) hidden(p string) bool {
	if len(e.Hidden) > 0 && slices.Contains(e.Hidden, p) {
		return true
	}
	if e.IsPlaceholder == nil {
		return false
	}
	return strings.HasPrefix(filepath.Base(p), wire.PlaceholderTempPrefix) && placeholderShaped(p) || e.Candidates[p] && e.IsPlaceholder(p)
}

// placeholderShaped reports whether p, not followed, is a directory that
// is empty or a regular file that holds what a placeholder of its name
// does (wire.PlaceholderContent: nothing but for a git commondir). A
// temporary name ends in the placeholder's own, after a dash.
func placeholderShaped(p string) bool {
	fi, err := os.Lstat(p)
	switch {
	case err != nil:
		return false
	case fi.Mode().IsRegular():
		var want []byte
		if base := filepath.Base(p); strings.HasSuffix(base, "-commondir") {
			want = wire.PlaceholderContent("commondir")
		}
		if fi.Size() != int64(len(want)) {
			return false
		}
		if len(want) == 0 {
			return true
		}
		b, err := os.ReadFile(p)
		return err == nil && string(b) == string(want)
	case !fi.IsDir():
		return false
	}
	d, err := os.Open(p)
	if err != nil {
		return false
	}
	defer d.Close()
	_, err = d.Readdirnames(1)
	return errors.Is(err, io.EOF)
}

// PathAccess is one path a call touches.
type PathAccess struct {
	Path  string // as the model gave it (absolute, or relative to Env.Cwd)
	Write bool   // the call may create or modify it
}

// Access is everything a call would touch, for the grant check.
type Access struct {
	Paths []PathAccess
	Hosts []string // "host:port" for network tools
	Exec  bool     // the call runs arbitrary commands
}

// Args is a tool's parsed, validated arguments.
type Args interface {
	// Access lists what the call would touch.
	Access() Access
}

// Def describes one tool.
type Def struct {
	Name        string
	Description string
	// Hints say whether the tool is read-only, destructive, idempotent or
	// reaches the network, and give it a title (MCP's tool annotations).
	Hints Hints
	// Schema is the JSON schema of the arguments, derived from the args
	// struct when Lookup or All first returns the Def (not at package
	// initialisation, nor for Find: every start of the binary, the
	// sandbox init's too, would pay for the reflection).
	Schema json.RawMessage
	// Broker tools (background_command) are answered by the broker from its
	// own state and never dispatched to a sandbox; their Run only fails.
	Broker bool

	parse  func(raw json.RawMessage) (Args, error)
	run    func(ctx context.Context, env Env, a Args) wire.ToolOutput
	schema func() json.RawMessage
	once   sync.Once
}

// ready fills d.Schema on first use.
func (d *Def) ready() *Def {
	d.once.Do(func() { d.Schema = d.schema() })
	return d
}

// Parse decodes raw strictly (unknown fields, duplicate keys and case-only
// matches refused) and validates the values. The error names the field and value.
func (d *Def) Parse(raw json.RawMessage) (Args, error) {
	if len(raw) == 0 {
		raw = json.RawMessage("{}")
	}
	a, err := d.parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.Name, err)
	}
	return a, nil
}

// Run runs the tool with arguments from Parse.
func (d *Def) Run(ctx context.Context, env Env, a Args) wire.ToolOutput {
	return d.run(ctx, env, a)
}

// A validator is implemented by args structs that check their values after decoding.
type validator interface {
	validate() error
}

// define builds a Def for an args type A.
func define[A Args](name, description string, run func(context.Context, Env, A) wire.ToolOutput) *Def {
	var zero A
	required := sync.OnceValue(func() []string { return requiredFields(zero) })
	h, ok := hints[name]
	if !ok {
		panic("tool: no hints for " + name)
	}
	return &Def{
		Name:        name,
		Description: description,
		Hints:       h,
		schema:      func() json.RawMessage { return schemaFor(zero) },
		parse: func(raw json.RawMessage) (Args, error) {
			var a A
			if err := wire.DecodeStrict(raw, &a); err != nil {
				return nil, err
			}
			if err := checkRequired(raw, required()); err != nil {
				return nil, err
			}
			if v, ok := any(&a).(validator); ok {
				if err := v.validate(); err != nil {
					return nil, err
				}
			}
			return a, nil
		},
		run: func(ctx context.Context, env Env, a Args) wire.ToolOutput {
			typed, ok := a.(A)
			if !ok {
				return Failure("internal error: %s got arguments of type %T", name, a)
			}
			return run(ctx, env, typed)
		},
	}
}

// Lookup returns the tool with the given name, a copy: changing it changes
// nothing else.
func Lookup(name string) (*Def, bool) {
	i := slices.IndexFunc(all, func(d *Def) bool { return d.Name == name })
	if i < 0 {
		return nil, false
	}
	return all[i].ready().clone(true), true
}

// clone returns a copy of d for a caller to keep: the tool's Def itself
// stays this package's. Lookup, Find and All once returned the shared
// Defs, so a program that adjusted one for its model or client (a
// description, a hint, its schema in place) changed every session in the
// process: a shell marked idempotent was sent again when remote hands were
// lost with it in flight, which must never happen to a call that may not
// be repeated. The copy holds d's Schema when withSchema (d is ready);
// otherwise it fills its own on first use.
func (d *Def) clone(withSchema bool) *Def {
	c := &Def{
		Name: d.Name, Description: d.Description, Hints: d.Hints, Broker: d.Broker,
		parse: d.parse, run: d.run, schema: d.schema,
	}
	if withSchema {
		c.Schema = slices.Clone(d.Schema)
		c.once.Do(func() {})
	}
	return c
}

// Find is Lookup for a caller that parses and runs calls and never lists
// the tool (the runner in a sandbox): the Def's Schema is not filled for
// it, so that a sandbox's start does not pay for the schema's reflection.
// Schema may be nil in the Def it returns.
func Find(name string) (*Def, bool) {
	i := slices.IndexFunc(all, func(d *Def) bool { return d.Name == name })
	if i < 0 {
		return nil, false
	}
	return all[i].clone(false), true
}

// All returns every tool, in a fixed order. The Defs are copies: changing
// one changes nothing else.
func All() []*Def {
	out := make([]*Def, len(all))
	for i, d := range all {
		out[i] = d.ready().clone(true)
	}
	return out
}

// Names returns the names of every tool, in the order of All.
func Names() []string {
	out := make([]string, len(all))
	for i, d := range all {
		out[i] = d.Name
	}
	return out
}

// Failure is a tool-level failure the model reads.
func Failure(format string, args ...any) wire.ToolOutput {
	return wire.ToolOutput{Content: fmt.Sprintf(format, args...), IsError: true}
}
