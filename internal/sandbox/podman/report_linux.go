package podman

import (
	"os"
	"os/exec"
	"strings"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/wire"
)

// Report says what this backend enforces here; see Probe. It probes
// once: the broker asks for it on every call.
func (b *Backend) Report() sandbox.Report {
	b.reportOnce.Do(func() { b.report = Probe(&b.opts) })
	return b.report
}

// Probe reports whether the Podman backend can run on this host with
// opts, and why not, without making a backend (for airlock doctor).
func Probe(opts *Options) sandbox.Report {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Runtime == "" {
		o.Runtime = "runc"
	}
	rep := sandbox.Report{Backend: "podman"}
	add := func(name string, ok bool, detail, fix string) {
		f := sandbox.Feature{Name: name, Available: ok, Required: true, Detail: detail}
		if !ok {
			f.Fix = fix
		}
		rep.Features = append(rep.Features, f)
	}
	podman, err := findPodman(o.Podman)
	if err != nil {
		add("podman", false, "not found on PATH", fixInstall)
	} else {
		out, err := exec.Command(podman, "--version").Output()
		add("podman", err == nil, strings.TrimSpace(string(out)), fixInstall)
	}
	if rt, err := exec.LookPath(o.Runtime); err != nil {
		add("OCI runtime "+o.Runtime, false, "not found on PATH", "apt-get install "+o.Runtime+" (runc works where crun refuses a cgroup v1 or hybrid layout)")
	} else {
		add("OCI runtime "+o.Runtime, true, rt, "")
	}
	add("root", os.Geteuid() == 0, "idmapped mounts of the grant's paths need CAP_SYS_ADMIN", "run airlock as root, or use the native backend")
	if exe, err := staticExe(o.Executable); err != nil {
		add("static airlock binary", false, err.Error(), "build airlock with CGO_ENABLED=0")
	} else {
		add("static airlock binary", true, exe, "")
	}
	switch {
	case o.Image == "":
		rep.Features = append(rep.Features, sandbox.Feature{Name: "image", Detail: "none chosen: set [runner] image = \"NAME@sha256:...\" in the grant", Required: false})
	case grant.CheckImage(o.Image) != nil:
		add("image", false, grant.CheckImage(o.Image).Error(), "pin the image by digest")
	case podman != "":
		err := exec.Command(podman, "--runtime", o.Runtime, "image", "exists", o.Image).Run()
		add("image", err == nil, o.Image, "load the image on this host (podman pull, load or import), then pin it by the digest podman reports")
	}
	enforced := func(name wire.Limit, detail string) sandbox.LimitStatus {
		return sandbox.LimitStatus{Limit: name, Enforced: true, Detail: detail}
	}
	rep.Limits = []sandbox.LimitStatus{
		enforced(sandbox.LimitTime, "the broker kills the container; conmon's --timeout and the init's deadline if the broker died"),
		enforced(sandbox.LimitMemory, "podman --memory (cgroup)"),
		enforced(sandbox.LimitProcesses, "podman --pids-limit (cgroup)"),
		enforced(sandbox.LimitOutput, "a result keeps at most the cap (a command's output its start and end); a command that writes 8 times the cap is killed with its container"),
		enforced(sandbox.LimitFileSize, "RLIMIT_FSIZE"),
		enforced(sandbox.LimitTmp, "a sized tmpfs on /tmp"),
		enforced(sandbox.LimitDisk, "a call that drives a file system it may write below its floor of free space (1%, 256 MiB to 4 GiB) or of free inodes (1%) is killed"),
	}
	return rep
}
