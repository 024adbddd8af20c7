package linux

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/linux/initproto"
)

// procFix is how to give the sandbox a /proc of its own where a container
// runtime masks parts of the container's.
const procFix = "run airlock where the container's /proc is not masked: with podman or docker, --security-opt systempaths=unconfined; " +
	"in Kubernetes the restricted Pod Security Standard forbids procMount: Unmasked: ask for user-namespaced pods, which may unmask it, " +
	"with remote.pod_security = \"userns\" (a namespace labelled for the baseline standard, airlock's seccomp profile on the nodes: " +
	"deploy/seccomp), or run the hands under a RuntimeClass whose runtime has its own kernel " +
	"(remote.runtime_class = \"gvisor\"; docs/kubernetes.md says what each runtime lacks)"

// setupError turns the init's failure status into an error: a
// MissingFeatureError naming what the host lacks when the init says which
// step the host refused (initproto.Status.Step), else the init's message.
func setupError(st initproto.Status) error {
	switch st.Step {
	case initproto.StepProc:
		return &sandbox.MissingFeatureError{
			Feature: "a fresh /proc for the sandbox",
			Reason: st.Error + ": the container runtime masks parts of this container's /proc (runc's maskedPaths, " +
				"such as /proc/kcore and /proc/keys), and Linux lets a user namespace mount a new proc only where " +
				"no part of the existing one is hidden",
			Fix: procFix,
		}
	case initproto.StepHostname:
		return &sandbox.MissingFeatureError{
			Feature: "sethostname in the sandbox's UTS namespace",
			Reason: st.Error + ": the container's seccomp profile refuses it (the RuntimeDefault profile of podman " +
				"and CRI-O allows sethostname only with CAP_SYS_ADMIN)",
			Fix: "run airlock without that seccomp profile: with podman or docker, --security-opt seccomp=unconfined; " +
				"in Kubernetes, remote.pod_security = \"userns\", whose pods use airlock's own profile (deploy/seccomp/hands.json, " +
				"installed on the nodes), or a RuntimeClass whose runtime has its own kernel (remote.runtime_class)",
		}
	case initproto.StepMountNS:
		return &sandbox.MissingFeatureError{
			Feature: "a mount namespace of the sandbox's own",
			Reason:  st.Error + ": the kernel did not give the sandbox a mount namespace its user namespace owns",
			Fix:     "run airlock on a kernel or container runtime with mount namespaces",
		}
	}
	return fmt.Errorf("sandbox setup: %s", st.Error)
}

// hostReady refuses every Run on a host that lacks a feature the sandbox
// cannot be built without, as Report lists them (cgroups aside: enforceable
// decides about those), naming all of them at once; otherwise a call would
// fail on the first one at some step of the init's setup.
func (b *Backend) hostReady() error {
	var names, details, fixes []string
	for _, f := range b.Report().Features {
		if !f.Required || f.Available || f.Name == "cgroups" {
			continue
		}
		names = append(names, f.Name)
		details = append(details, f.Name+": "+f.Detail)
		if f.Fix != "" && !slices.Contains(fixes, f.Fix) {
			fixes = append(fixes, f.Fix)
		}
	}
	if len(names) == 0 {
		return nil
	}
	fix := strings.Join(fixes, "; ")
	if fix == "" {
		fix = nsFix
	}
	return &sandbox.MissingFeatureError{Feature: strings.Join(names, ", "), Reason: strings.Join(details, "; "), Fix: fix}
}

// silentExit explains an init that ended without a status line (werr: the
// host's error sending the config, if any), from how it ended.
func silentExit(ps *os.ProcessState, werr error) error {
	how := "exited"
	if ps != nil {
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			how = fmt.Sprintf("was killed by signal %d (%v)", int(ws.Signal()), ws.Signal())
		} else {
			how = fmt.Sprintf("exited with status %d", ps.ExitCode())
		}
	}
	err := fmt.Errorf("sandbox setup: the sandbox's init %s before it reported a status (the kernel or container runtime may lack something the init needs early: run airlock doctor)", how)
	if werr != nil {
		err = fmt.Errorf("%w; sending it the config: %w", err, werr)
	}
	return err
}
