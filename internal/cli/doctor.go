package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/kube/kubereq"
	"github.com/airlockhq/airlock/internal/native"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/podman"
	"github.com/airlockhq/airlock/wire"
)

// printPodmanLine says in one line whether the Podman backend could run.
func printPodmanLine(env *Env) {
	rep := podman.Probe(nil)
	var missing []string
	for _, f := range rep.Features {
		if f.Required && !f.Available {
			missing = append(missing, f.Name)
		}
	}
	if len(missing) == 0 {
		fmt.Fprintln(env.Stdout, "podman backend: can run here (--backend podman with an image pinned by digest; see airlock doctor --backend podman --image IMAGE)")
		return
	}
	fmt.Fprintf(env.Stdout, "podman backend: cannot run here: missing %s (airlock doctor --backend podman for the fix)\n", strings.Join(missing, ", "))
}

func doctorCommand() *command {
	c := &command{
		name:    "doctor",
		summary: "show which isolation features this host provides and which airlock needs",
		usage: `airlock doctor [--json] [--backend B [--image I]] [--remote kube://NS/TEMPLATE [--runtime-class RC] [--pod-security P]] [--grant FILE]

Probes the host and prints each isolation feature: whether it is available,
whether the default grant needs it, and how to fix it when it is missing;
"sandbox start" is one trial sandbox, which shows what a container runtime
refuses that the probes cannot see (a masked /proc, a seccomp profile);
then each kind of limit and whether it is enforced for this user. Memory and
process limits need a cgroup the user may manage: without one every call is
refused (the default grant has both limits) unless it accepts them unenforced
(--allow-unenforced-limits, or limits.unenforced = "allow" in the grant).
With --backend podman it reports the Podman backend instead (podman, the
runc runtime, root, a static airlock binary and, with --image, the image);
without it, a last line says whether the Podman backend could run here.
With --remote kube://NAMESPACE/TEMPLATE it reports the cluster instead
(through the airlock-kube helper): the agent-sandbox CRDs, the template,
the RuntimeClass, the pods' security profile (restricted or userns) and
whether the namespace's Pod Security admission lets them in, and each
permission the broker needs. --grant FILE takes the endpoint, runtime
class and pod security from the grant's [remote] where the flags do not.
Exit status 1 when a required feature is missing.`,
	}
	c.run = func(ctx context.Context, env *Env, args []string) int {
		fs := newFlags(c, env)
		asJSON := fs.Bool("json", false, "print the report as JSON")
		backend := fs.String("backend", "", "report `BACKEND` (linux or podman) instead of the native one")
		image := fs.String("image", "", "with --backend podman, check that `IMAGE` (NAME@sha256:...) is present")
		remote := fs.String("remote", "", "report what the cluster of `kube://NAMESPACE/TEMPLATE` offers the hands and what is missing")
		runtimeClass := fs.String("runtime-class", "", "with --remote kube://..., check that RuntimeClass `RC` exists")
		podSecurity := fs.String("pod-security", "", "with --remote kube://..., the pods' security profile `P` (restricted or userns, as remote.pod_security)")
		grantFile := fs.String("grant", "", "with a kube:// endpoint, take --remote, --runtime-class and --pod-security from grant `FILE`'s [remote]")
		if code := parseFlags(c, env, fs, args); code >= 0 {
			return code
		}
		if fs.NArg() != 0 {
			return usageError(env, c, "unexpected argument %q", fs.Arg(0))
		}
		if *grantFile != "" {
			g, err := grant.Load(*grantFile)
			if err != nil {
				fmt.Fprintf(env.Stderr, "airlock doctor: --grant: %v\n", err)
				return exitUsage
			}
			r := g.Remote()
			if !strings.HasPrefix(r.Endpoint, kubereq.Scheme) && *remote == "" {
				fmt.Fprintf(env.Stderr, "airlock doctor: --grant %s: its remote.endpoint %q is not kube://NAMESPACE/TEMPLATE (the doctor checks only clusters against a grant)\n", *grantFile, r.Endpoint)
				return exitUsage
			}
			if *remote == "" {
				*remote = r.Endpoint
			}
			if *runtimeClass == "" {
				*runtimeClass = r.RuntimeClass
			}
			if *podSecurity == "" {
				*podSecurity = r.PodSecurity
			}
		}
		if *remote != "" {
			return kubeDoctor(ctx, env, *remote, *runtimeClass, *podSecurity, *asJSON)
		}
		if *podSecurity != "" {
			return usageError(env, c, "--pod-security is for --remote kube://...")
		}
		var rep sandbox.Report
		switch *backend {
		case "", "linux":
			b, err := native.New(nil)
			if err != nil {
				rep = sandbox.Report{Backend: "linux", Features: []sandbox.Feature{{Name: "native sandbox", Required: true, Detail: err.Error()}}}
			} else {
				rep = b.Report()
				if f, ok := trialSandbox(ctx, b, rep); ok {
					rep.Features = append(append([]sandbox.Feature(nil), rep.Features...), f)
				}
			}
		case "podman":
			rep = podman.Probe(&podman.Options{Image: *image})
		default:
			fmt.Fprintf(env.Stderr, "airlock doctor: --backend %q: unknown backend (known: linux, podman)\n", *backend)
			return exitUsage
		}
		if *asJSON {
			out, _ := json.MarshalIndent(struct {
				sandbox.Report
				Ready bool `json:"ready"`
			}{rep, rep.Ready()}, "", "  ")
			fmt.Fprintf(env.Stdout, "%s\n", out)
		} else {
			printReport(env, rep)
			if *backend == "" {
				printPodmanLine(env)
			}
		}
		if !rep.Ready() {
			return exitFailure
		}
		return exitOK
	}
	return c
}

// trialSandbox starts one real sandbox, as a call does, when the report
// lists everything it needs (cgroups aside): the probes read files and
// sysctls, but a container runtime can still refuse a step of the setup
// (a masked /proc, a seccomp profile). Its limits are accepted unenforced so
// that missing cgroups, reported on their own, hide nothing else. ok is
// false when the trial was not run.
func trialSandbox(ctx context.Context, b sandbox.Backend, rep sandbox.Report) (f sandbox.Feature, ok bool) {
	for _, f := range rep.Features {
		if f.Required && !f.Available && f.Name != "cgroups" {
			return sandbox.Feature{}, false
		}
	}
	f = sandbox.Feature{Name: "sandbox start", Required: true}
	dir, err := os.MkdirTemp("", "airlock-doctor-")
	if err != nil {
		f.Detail = fmt.Sprintf("no directory for the trial sandbox: %v", err)
		return f, true
	}
	defer os.Remove(dir)
	if dir, err = filepath.EvalSymlinks(dir); err != nil {
		f.Detail = fmt.Sprintf("no directory for the trial sandbox: %v", err)
		return f, true
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err = b.Run(ctx, &sandbox.Spec{Mounts: []sandbox.Mount{{Source: dir}}, Env: []string{}, Cwd: dir,
		Limits: sandbox.Limits{Wall: 20 * time.Second, AllowUnenforced: true}})
	if err == nil {
		f.Available, f.Detail = true, "a trial sandbox started (namespaces, its own /proc, pivot_root, seccomp)"
		return f, true
	}
	f.Detail = err.Error()
	var mf *sandbox.MissingFeatureError
	if errors.As(err, &mf) {
		f.Detail = "lacks " + mf.Feature
		if mf.Reason != "" {
			f.Detail += " (" + mf.Reason + ")"
		}
		f.Fix = mf.Fix
	}
	return f, true
}

func printReport(env *Env, rep sandbox.Report) {
	fixed := map[string]bool{}
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
	if len(rep.Limits) > 0 {
		fmt.Fprintf(env.Stdout, "\nlimits for uid %d:\n", os.Getuid())
		tw = tabwriter.NewWriter(env.Stdout, 0, 4, 2, ' ', 0)
		for _, l := range rep.Limits {
			status := "enforced"
			if !l.Enforced {
				status = "NOT ENFORCED"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s\n", l.Limit, status, l.Detail)
		}
		tw.Flush()
	}
	for _, f := range rep.Features {
		if !f.Available && f.Fix != "" && !fixed[f.Fix] {
			fixed[f.Fix] = true
			fmt.Fprintf(env.Stdout, "\nto fix %s: %s\n", f.Name, f.Fix)
		}
	}
	unenforced := rep.Unenforced()
	for _, l := range rep.Limits {
		if !l.Enforced && l.Fix != "" && !fixed[l.Fix] {
			fixed[l.Fix] = true
			fmt.Fprintf(env.Stdout, "\nto enforce %s: %s\n", wire.JoinLimits(unenforced, ", "), l.Fix)
		}
	}
	switch {
	case rep.Ready() && len(unenforced) == 0:
		fmt.Fprintln(env.Stdout, "\nready: this host can run airlock's sandbox and enforce every limit")
	case onlyCgroupsMissing(rep):
		fmt.Fprintf(env.Stdout, "\nNOT READY: calls are refused because the %s limits cannot be enforced for uid %d; fix that as above, "+
			"or accept it with --allow-unenforced-limits or limits.unenforced = \"allow\" in the grant (every result then says NOT ENFORCED)\n",
			limitNouns(unenforced), os.Getuid())
	case rep.Ready():
		fmt.Fprintf(env.Stdout, "\nready, but the %s limits are NOT ENFORCED\n", limitNouns(unenforced))
	default:
		fmt.Fprintln(env.Stdout, "\nNOT READY: airlock refuses to run calls until the required features above are present")
	}
}

// limitNouns renders limit names for a sentence: "memory and process".
func limitNouns(names []wire.Limit) string {
	words := make([]string, len(names))
	for i, n := range names {
		switch n {
		case sandbox.LimitProcesses:
			words[i] = "process"
		case sandbox.LimitFileSize:
			words[i] = "file size"
		case sandbox.LimitTmp:
			words[i] = "/tmp size"
		default:
			words[i] = string(n)
		}
	}
	if len(words) <= 1 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " and " + words[len(words)-1]
}

// onlyCgroupsMissing reports whether the cgroups are the one required
// feature the host lacks, so that calls run once they accept unenforced
// memory and process limits.
func onlyCgroupsMissing(rep sandbox.Report) bool {
	cg := false
	for _, f := range rep.Features {
		if f.Required && !f.Available {
			if f.Name != "cgroups" {
				return false
			}
			cg = true
		}
	}
	return cg
}
