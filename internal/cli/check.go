package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/native"
	"github.com/airlockhq/airlock/internal/printable"
	"github.com/airlockhq/airlock/tool"
	"github.com/airlockhq/airlock/wire"
)

func checkCommand() *command {
	c := &command{
		name:    "check",
		summary: "explain what a grant decides for one call, without running it",
		usage: `airlock check GRANT TOOL 'JSON-ARGS'

Parses the arguments as the broker would, checks them against GRANT (a TOML
file, or "-" for the default grant of the current directory) and prints the
decision, the rule behind it, the limits the call would run under, whether
this host can enforce them for this user, and any risks the grant accepts.
Nothing runs. Exit status 0 when allowed, 1 when refused (by the grant, or
because the host cannot enforce its memory and process limits and the grant
does not accept that).`,
	}
	c.run = func(ctx context.Context, env *Env, args []string) int {
		fs := newFlags(c, env)
		if code := parseFlags(c, env, fs, args); code >= 0 {
			return code
		}
		switch n := fs.NArg(); {
		case n == 0:
			return usageError(env, c, "missing GRANT and TOOL: usage: airlock check GRANT TOOL ['JSON-ARGS'] (GRANT \"-\" is the default grant)")
		case n == 1:
			return usageError(env, c, "missing TOOL after the grant %q: usage: airlock check GRANT TOOL ['JSON-ARGS'] (tools: %s)", fs.Arg(0), strings.Join(tool.Names(), ", "))
		case n > 3:
			return usageError(env, c, "too many arguments (%d): usage: airlock check GRANT TOOL ['JSON-ARGS'] (quote the JSON)", n)
		}
		gf := grantFlags{grantFile: fs.Arg(0)}
		if gf.grantFile == "-" {
			gf.grantFile = ""
		}
		g, err := gf.load(env)
		if err != nil {
			fmt.Fprintf(env.Stderr, "airlock check: %v\n", err)
			return exitFailure
		}
		raw := "{}"
		if fs.NArg() == 3 {
			raw = fs.Arg(2)
		}
		host := probeHost()
		fmt.Fprint(env.Stdout, explain(g, fs.Arg(1), json.RawMessage(raw), host))
		d, _ := decide(g, fs.Arg(1), json.RawMessage(raw))
		if !d.Allowed || host.refuses(g, fs.Arg(1)) {
			return exitFailure
		}
		return exitOK
	}
	return c
}

// hostLimits is what the native backend can enforce here, for check.
type hostLimits struct {
	unenforced []wire.Limit // limits it cannot enforce for this user
	err        error        // no native backend at all
}

// probeHost asks the native backend which limits it enforces.
func probeHost() hostLimits {
	b, err := native.New(nil)
	if err != nil {
		return hostLimits{err: err}
	}
	return hostLimits{unenforced: b.Report().Unenforced()}
}

// refuses reports whether the backend would refuse a call of the tool
// under g: it runs in a sandbox, and its limits cannot all be enforced
// while g does not accept that.
func (h hostLimits) refuses(g *grant.Grant, name string) bool {
	def, ok := tool.Lookup(name)
	return ok && !def.Broker && h.err == nil && len(h.unenforced) > 0 && !g.AllowsUnenforcedLimits()
}

// line is check's "host:" line, or "" when the host enforces every limit.
func (h hostLimits) line(g *grant.Grant, name string) string {
	if def, ok := tool.Lookup(name); !ok || def.Broker {
		return ""
	}
	switch {
	case h.err != nil:
		return fmt.Sprintf("host:     no sandbox here (%v): calls need --unsandboxed, which enforces no memory or process limit\n", h.err)
	case len(h.unenforced) == 0:
		return ""
	case g.AllowsUnenforcedLimits():
		return fmt.Sprintf("host:     cannot enforce %s for uid %d (see airlock doctor); the call runs anyway, as limits.unenforced = \"allow\" accepts, and its result says NOT ENFORCED\n",
			wire.JoinLimits(h.unenforced, ", "), os.Getuid())
	}
	return fmt.Sprintf("host:     cannot enforce %s for uid %d (see airlock doctor), so the call would be refused; --allow-unenforced-limits or limits.unenforced = \"allow\" runs it anyway\n",
		wire.JoinLimits(h.unenforced, ", "), os.Getuid())
}

// decide runs the broker's checks for one call, without running it.
func decide(g *grant.Grant, name string, raw json.RawMessage) (grant.Decision, tool.Access) {
	def, ok := tool.Lookup(name)
	if !ok {
		return grant.Decision{Rule: "tools", Reason: fmt.Sprintf("unknown tool %q (tools: %s)", name, strings.Join(tool.Names(), ", "))}, tool.Access{}
	}
	args, err := def.Parse(raw)
	if err != nil {
		return grant.Decision{Rule: "arguments", Reason: err.Error()}, tool.Access{}
	}
	acc := args.Access()
	gc := grant.Call{Tool: name, Hosts: acc.Hosts, Exec: acc.Exec, Cwd: g.WorkDir()}
	for _, p := range acc.Paths {
		gc.Paths = append(gc.Paths, grant.PathUse{Path: p.Path, Write: p.Write})
	}
	return g.Check(gc), acc
}

// explain renders the decision for one call, with what the host can
// enforce of its limits. Each field is made printable on one line: a
// grant's paths come from the file system and a grant file from anywhere,
// and a name holding a newline or an escape sequence must not make a line
// of check's output (a "decision: ALLOWED" under the REFUSED it erased).
func explain(g *grant.Grant, name string, raw json.RawMessage, host hostLimits) string {
	var b strings.Builder
	line := func(label string, fields ...string) {
		b.WriteString(label)
		for _, f := range fields {
			b.WriteString(printable.Line(f))
		}
		b.WriteByte('\n')
	}
	d, acc := decide(g, name, raw)
	line("grant:    ", grantLabel(g))
	line("call:     ", name, " ", compactJSON(raw))
	for _, p := range acc.Paths {
		mode := "read"
		if p.Write {
			mode = "write"
		}
		line("touches:  ", p.Path, " ("+mode+")")
	}
	for _, h := range acc.Hosts {
		line("reaches:  ", h)
	}
	if acc.Exec {
		line("runs:     ", "arbitrary commands in the sandbox")
	}
	if d.Allowed {
		line("decision: ", "ALLOWED by ", d.Rule)
		line("limits:   ", g.LimitsFor(name).String())
		if h := host.line(g, name); h != "" {
			line("host:     ", strings.TrimSuffix(strings.TrimPrefix(h, "host:     "), "\n"))
		}
	} else {
		line("decision: ", "REFUSED by ", d.Rule, ": ", d.Reason)
	}
	for _, r := range append(d.Risks, g.Risks()...) {
		line("risk:     ", r)
	}
	return b.String()
}

func grantLabel(g *grant.Grant) string {
	if g.Source() == "flags" {
		return "default (the current directory read-write, no network)"
	}
	return g.Source()
}

func compactJSON(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, _ := json.Marshal(v)
	return string(b)
}
