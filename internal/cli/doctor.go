package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"text/tabwriter"

	"github.com/airlockhq/airlock/internal/sandbox"
)

func doctorCommand() *command {
	c := &command{
		name:    "doctor",
		summary: "show which isolation features this host provides and which airlock needs",
		usage: `airlock doctor [--json]

Probes the host and prints each isolation feature: whether it is available,
whether the default grant needs it, and how to fix it when it is missing.
Exit status 1 when a required feature is missing.`,
	}
	c.run = func(ctx context.Context, env *Env, args []string) int {
		fs := newFlags(c, env)
		asJSON := fs.Bool("json", false, "print the report as JSON")
		if code := parseFlags(fs, args); code >= 0 {
			return code
		}
		if fs.NArg() != 0 {
			fs.Usage()
			return exitUsage
		}
		b, err := nativeBackend("")
		var rep sandbox.Report
		if err != nil {
			rep = sandbox.Report{Backend: "linux", Features: []sandbox.Feature{{Name: "native sandbox", Required: true, Detail: err.Error()}}}
		} else {
			rep = b.Report()
		}
		if *asJSON {
			out, _ := json.MarshalIndent(struct {
				sandbox.Report
				Ready bool `json:"ready"`
			}{rep, rep.Ready()}, "", "  ")
			fmt.Fprintf(env.Stdout, "%s\n", out)
		} else {
			printReport(env, rep)
		}
		if !rep.Ready() {
			return exitFailure
		}
		return exitOK
	}
	return c
}

func printReport(env *Env, rep sandbox.Report) {
	fmt.Fprintf(env.Stdout, "backend: %s\n\n", rep.Backend)
	tw := tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FEATURE\tSTATUS\tNEEDED\tDETAIL")
	for _, f := range rep.Features {
		status := "ok"
		if !f.Available {
			status = "MISSING"
		}
		need := "optional"
		if f.Required {
			need = "required"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", f.Name, status, need, f.Detail)
	}
	tw.Flush()
	for _, f := range rep.Features {
		if !f.Available && f.Fix != "" {
			fmt.Fprintf(env.Stdout, "\nto fix %s: %s", f.Name, f.Fix)
		}
	}
	if rep.Ready() {
		fmt.Fprintln(env.Stdout, "\nready: this host can run airlock's sandbox")
	} else {
		fmt.Fprintln(env.Stdout, "\nNOT READY: airlock refuses to run calls until the required features above are present")
	}
}
