package broker

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/tool"
	"github.com/airlockhq/airlock/wire"
)

// BaseEnv is the environment every sandbox starts with; nothing of the
// broker's own environment is inherited.
var BaseEnv = []string{
	"PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin",
	"HOME=/tmp",
	"TMPDIR=/tmp",
	"LANG=C.UTF-8",
	"LC_ALL=C.UTF-8",
	"USER=airlock",
	"LOGNAME=airlock",
	"SHELL=/bin/sh",
	"TERM=dumb",
	"AIRLOCK_SANDBOX=1",
	// git (2.31 and later) excludes airlock's placeholders from what it
	// takes for new files (wire.PlaceholderExcludes).
	"GIT_CONFIG_COUNT=1",
	"GIT_CONFIG_KEY_0=core.excludesFile",
	"GIT_CONFIG_VALUE_0=" + wire.PlaceholderExcludes,
}

// sandboxWorkDir is where a sandbox of g starts: the grant's working
// directory, or, when the grant names no directory that holds it (a grant
// of hosts alone), the sandbox's own /tmp, which every sandbox has; a
// directory the sandbox cannot see would fail every call with "no such
// file or directory" for a directory that exists on the host.
func sandboxWorkDir(g *grant.Grant) string {
	if g.NamesDirectory() {
		return g.WorkDir()
	}
	return "/tmp"
}

// SpecFor builds the sandbox Spec for a grant and limits: the grant's mounts,
// masks and protected paths, the built environment and the grant's cwd.
func SpecFor(g *grant.Grant, l grant.Limits) *sandbox.Spec {
	spec := &sandbox.Spec{
		Env: append([]string(nil), BaseEnv...),
		Cwd: sandboxWorkDir(g),
		Limits: sandbox.Limits{
			Wall:        l.Time,
			MemoryBytes: l.Memory,
			Pids:        l.Processes,
			// The runner caps the model's text itself; the sandbox cap bounds
			// the frame around it and any stray output.
			OutputBytes: wire.SandboxOutputBytes(l.Output),
			FileBytes:   l.FileSize,
			TmpBytes:    l.Tmp,
			// Without it a backend refuses a call whose memory or process
			// limit the host cannot enforce.
			AllowUnenforced: g.AllowsUnenforcedLimits(),
		},
	}
	for _, m := range g.Mounts() {
		spec.Mounts = append(spec.Mounts, sandbox.Mount{Source: m.Source, Writable: m.Writable})
	}
	spec.Masks = g.Masks()
	spec.ReadOnly = g.Protected()
	spec.ReadOnlyDirs = g.ProtectedDirs()
	return spec
}

func (s *Session) spec(l grant.Limits) *sandbox.Spec { return SpecFor(s.opts.Grant, l) }

// toolSpec is the spec of a call to def under limits l (see narrowFor).
func (s *Session) toolSpec(def *tool.Def, l grant.Limits) *sandbox.Spec {
	spec := s.spec(l)
	narrowFor(def, spec)
	return spec
}

// ToolSpecFor is the spec of a call to the named tool under g: SpecFor with
// the tool's limits, narrowed for the tool as a session narrows it.
func ToolSpecFor(g *grant.Grant, name string) *sandbox.Spec {
	spec := SpecFor(g, g.LimitsFor(name))
	if def, ok := tool.Lookup(name); ok {
		narrowFor(def, spec)
	}
	return spec
}

// narrowFor narrows spec to what a call to def needs. A tool that changes
// nothing (read_file, glob, grep, http_fetch, web_search) gets every mount
// read-only: its sandbox could not write the tree even if the tool's own
// code were turned against it, and a backend needs no placeholders for
// the tree's missing protected paths, which only a writable mount needs.
func narrowFor(def *tool.Def, spec *sandbox.Spec) {
	if !def.Hints.ReadOnly {
		return
	}
	for i := range spec.Mounts {
		spec.Mounts[i].Writable = false
	}
}

// label marks out as coming through airlock: tool output follows a header
// naming the tool, the sandbox and the grant, every limit the call hit
// (out.Meta.LimitsHit) and every limit the host did not enforce
// (iso.Unenforced); airlock's own sentences are in the header itself, so the
// model can tell the two apart. own marks out.Content as airlock's own
// sentence rather than tool output.
func (s *Session) label(toolName string, out wire.ToolOutput, iso *wire.Isolation, own bool) wire.ToolOutput {
	var unenforced []wire.Limit
	if iso != nil {
		unenforced = iso.Unenforced
	}
	return s.labelWith(toolName, out, iso, own, unenforced)
}

// labelWith is label with the limits not enforced given, for an answer
// about a sandbox that has not run yet (a background start).
func (s *Session) labelWith(toolName string, out wire.ToolOutput, iso *wire.Isolation, own bool, unenforced []wire.Limit) wire.ToolOutput {
	rep := s.opts.Backend.Report()
	backend, unsandboxed := rep.Backend, rep.Unsandboxed
	if iso != nil && iso.Backend != "" {
		backend, unsandboxed = iso.Backend, iso.Unsandboxed
	}
	where := backend + " sandbox"
	if unsandboxed {
		where = "UNSANDBOXED"
	}
	header := fmt.Sprintf("[airlock: %s · %s · grant %s", toolName, where, grantName(s.opts.Grant))
	if hit := out.Meta.LimitsHit; len(hit) == 1 {
		header += " · limit hit: " + string(hit[0])
	} else if len(hit) > 1 {
		header += " · limits hit: " + wire.JoinLimits(hit, ", ")
	}
	if len(unenforced) > 0 {
		header += " · limits NOT ENFORCED: " + wire.JoinLimits(unenforced, ", ")
	}
	header += "]"
	// Whatever a tool returns, the model never reads a secret's value: a
	// file, a command or a server may hold it (or its JSON or URL form).
	out.Content = s.secrets.redact().String(out.Content)
	if own {
		out.Content = header + " " + out.Content
	} else {
		out.Content = header + "\n" + out.Content
	}
	out.Meta.Isolation = iso
	return out
}

func (s *Session) labelRefusal(toolName, reason string) string {
	return fmt.Sprintf("[airlock: %s · refused by grant %s] %s", toolName, grantName(s.opts.Grant), reason)
}

// grantName names a grant in labels and the session's record: its file's
// base name, "from flags", or the file's name "and flags" when flags added
// to a file.
func grantName(g *grant.Grant) string {
	src := g.Source()
	if src != "flags" {
		return filepath.Base(src)
	}
	// A grant file with flags added to it (--ro, --allow-host,
	// --allow-unenforced-limits): the file is named, not hidden behind
	// the flags.
	var names []string
	for _, f := range g.Files() {
		names = append(names, filepath.Base(f))
	}
	if len(names) == 0 {
		return "from flags"
	}
	return strings.Join(names, ", ") + " and flags"
}
