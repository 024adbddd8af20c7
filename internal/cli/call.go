package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os/signal"
	"slices"
	"strings"
	"time"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/wire"

	"github.com/airlockhq/airlock/internal/printable"
	"github.com/airlockhq/airlock/tool"
)

func callCommand() *command {
	c := &command{
		name:     "call",
		sessions: true,
		summary:  "run one tool call in a fresh sandbox and print what the model would read",
		usage: `airlock call [flags] TOOL 'JSON-ARGS'

Runs TOOL with JSON-ARGS in a fresh sandbox built from the grant and prints the
text the model would read, made safe for a terminal: control characters
(escape sequences, carriage returns, backspaces), bidirectional and other
invisible format characters and bytes that are not UTF-8 are shown as escapes
(\x1b, \r, \u202e, \xff), and "[airlock" in the tool's output is shown as
"\[airlock", so only airlock's own label, the first line, starts that way.
--json prints the result exactly as the model gets it.

Exit status: 0 when the call completed, even if the tool reports a failure
(a missing file, a command that exited non-zero: its status is in the
result's "[exit N]" line); 1 when the grant refused it, the sandbox could not
run it, or it hit a limit that ended it (time, memory, output: the reason is
on stderr), or the result could not be written to standard output (a full
disk); 2 for bad usage.

Example: airlock call read_file '{"path": "README.md"}'

Tools: ` + strings.Join(tool.Names(), ", ") + `
(airlock tools prints their schemas; airlock check explains a grant's decision).`,
	}
	c.run = func(ctx context.Context, env *Env, args []string) int {
		fs := newFlags(c, env)
		var gf grantFlags
		gf.register(fs)
		asJSON := fs.Bool("json", false, "print the whole ToolOutput as JSON")
		if code := parseFlags(c, env, fs, args); code >= 0 {
			return code
		}
		switch n := fs.NArg(); {
		case n == 0:
			return usageError(env, c, "missing TOOL: usage: airlock call [flags] TOOL 'JSON-ARGS' (tools: %s)", strings.Join(tool.Names(), ", "))
		case n > 2:
			return usageError(env, c, "too many arguments (%d): usage: airlock call [flags] TOOL 'JSON-ARGS' (quote the JSON)", n)
		}
		toolName, rawArgs := fs.Arg(0), "{}"
		if _, builtin := tool.Lookup(toolName); !builtin {
			if names := callableTools(&gf); !slices.Contains(names, toolName) {
				hint := ""
				if s := suggest(toolName, names); s != "" {
					hint = fmt.Sprintf(" (did you mean %q?)", s)
				}
				return usageError(env, c, "unknown tool %q%s; tools: %s", toolName, hint, strings.Join(names, ", "))
			}
		}
		if fs.NArg() == 2 {
			rawArgs = fs.Arg(1)
		}
		if !json.Valid([]byte(rawArgs)) {
			fmt.Fprintf(env.Stderr, "airlock call: the arguments are not valid JSON: %s\n", rawArgs)
			return exitUsage
		}
		if toolName == "shell" && runsInBackground(rawArgs) {
			fmt.Fprintln(env.Stderr, "airlock call: run_in_background needs a session that outlives the call (airlock mcp, airlock serve or the Go API); airlock call would stop the work as it exits")
			return exitUsage
		}
		// Signals are taken over before the session opens, whose sandbox
		// starts while it opens (prestarter): one that comes meanwhile
		// cancels the call, and the session still closes in order.
		ctx, stop := signal.NotifyContext(ctx, stopSignals...)
		defer stop()
		sess, err := openSession(env, &gf, toolName)
		if err != nil {
			fmt.Fprintf(env.Stderr, "airlock call: %v\n", err)
			return exitFailure
		}
		warnScan(env, "airlock call", &gf, sess.Grant())
		closeSession := closeOnce(env, "airlock call", sess.Close)
		defer closeSession()
		res, err := sess.Call(ctx, toolName, json.RawMessage(rawArgs))
		// The session closes before the result is printed: its close
		// record and the call's share one fsync (broker.Options.OneCall),
		// which a slow reader of the output must not hold back.
		closeSession()
		if err != nil {
			fmt.Fprintf(env.Stderr, "airlock call: %v\n", err)
			return exitFailure
		}
		if *asJSON {
			b, _ := json.MarshalIndent(res.Output, "", "  ")
			fmt.Fprintf(env.Stdout, "%s\n", b)
		} else {
			fmt.Fprintln(env.Stdout, forPerson(res.Output.Content))
		}
		meta := res.Output.Meta
		for _, line := range callLimitSentences(toolName, rawArgs, res.Class, meta, sess.Grant().LimitsFor(toolName)) {
			fmt.Fprintf(env.Stderr, "airlock call: %s\n", line)
		}
		// One convention: 1 when the call did not complete or a limit ended
		// what it ran, 0 otherwise (a tool-level failure, a non-zero exit
		// or a limit hit that did not end the command included).
		if res.Class != wire.ClassOK || meta.Limit != "" {
			return exitFailure
		}
		return exitOK
	}
	return c
}

// callLimitSentences says which limits a call hit, as exec does: the
// sandbox's (Meta.LimitsHit) and the shell tool's own timeout and output
// cap (Meta.Limit wire.LimitTime or LimitOutput in a call of class ok: the
// tool ended its command, not the sandbox; Meta.LimitsHit names it too).
func callLimitSentences(toolName, rawArgs string, class wire.Class, meta wire.Meta, lim grant.Limits) []string {
	hits := meta.LimitsHit
	own := class == wire.ClassOK && meta.Limit != ""
	if own {
		hits = slices.DeleteFunc(slices.Clone(hits), func(l wire.Limit) bool { return l == meta.Limit })
	}
	// A limit that ended a tool call ended its sandbox: the call did not
	// complete (ClassMemory, ClassProcesses).
	out := limitSentences(toolName, hits, meta.Limit, meta.Limit != "", lim)
	if !own {
		return out
	}
	switch meta.Limit {
	case wire.LimitTime:
		timeout := tool.DefaultShellTimeout
		var a struct {
			Timeout float64 `json:"timeout"`
		}
		if json.Unmarshal([]byte(rawArgs), &a) == nil && a.Timeout > 0 {
			timeout = time.Duration(a.Timeout * float64(time.Second))
		}
		timeout = min(timeout, lim.Time)
		out = append(out, fmt.Sprintf("%s ran past its timeout (%s) and was killed", toolName, timeout.Round(time.Millisecond)))
	case wire.LimitOutput:
		out = append(out, fmt.Sprintf("%s wrote more than %d times its output limit (%s) and was stopped", toolName, tool.ShellKillFactor, grant.FormatSize(lim.Output)))
	}
	return out
}

// forPerson renders a result's content for a person's terminal. Everything
// is made printable (printable.Text), and every "[airlock" after the first
// (in any case) gets a backslash before it: the content starts with airlock's
// label, and a tool that prints a look-alike label, at the start of a line or
// where a long line wraps to the start of a row, shows "\[airlock" instead.
func forPerson(content string) string {
	s := printable.Text(content)
	const mark = "[airlock"
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '[' && i > 0 && len(s)-i >= len(mark) && strings.EqualFold(s[i:i+len(mark)], mark) {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// runsInBackground reports whether shell arguments ask for background work.
func runsInBackground(raw string) bool {
	var a struct {
		RunInBackground bool `json:"run_in_background"`
	}
	return json.Unmarshal([]byte(raw), &a) == nil && a.RunInBackground
}

// callableTools names the tools a call may name: airlock's, and the wasm
// tools of the grant file, if one is given and loads (a grant that does not
// load is reported when the session opens). It loads the grant, so it is
// asked only for a name that is not one of airlock's own tools.
func callableTools(gf *grantFlags) []string {
	names := tool.Names()
	if gf.grantFile == "" {
		return names
	}
	if g, err := grant.Load(gf.grantFile); err == nil {
		for _, w := range g.WasmTools() {
			names = append(names, w.Name)
		}
	}
	return names
}
