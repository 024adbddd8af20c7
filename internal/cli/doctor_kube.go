package cli

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/kube/kubereq"
	"github.com/airlockhq/airlock/internal/toolserver"
)

// kubeDoctor runs `airlock-kube doctor` for target: the Kubernetes client
// lives in the helper, not in this binary.
func kubeDoctor(ctx context.Context, env *Env, target, runtimeClass, podSecurity string, asJSON bool) int {
	if !strings.HasPrefix(target, kubereq.Scheme) {
		fmt.Fprintf(env.Stderr, "airlock doctor: --remote %q: only a kube://NAMESPACE/TEMPLATE target can be checked\n", target)
		return exitUsage
	}
	if _, _, err := kubereq.ParseTarget(target); err != nil {
		fmt.Fprintf(env.Stderr, "airlock doctor: --remote: %v\n", err)
		return exitUsage
	}
	helper, err := toolserver.FindKubeHelper(env.Getenv)
	if err != nil {
		fmt.Fprintf(env.Stderr, "airlock doctor: %v\n", err)
		return exitFailure
	}
	args := []string{"doctor"}
	if asJSON {
		args = append(args, "--json")
	}
	if runtimeClass != "" {
		args = append(args, "--runtime-class", runtimeClass)
	}
	switch podSecurity {
	case "":
	case grant.PodSecurityRestricted, grant.PodSecurityUserns:
		args = append(args, "--pod-security", podSecurity)
	default:
		fmt.Fprintf(env.Stderr, "airlock doctor: --pod-security %q is not %q or %q\n", podSecurity, grant.PodSecurityRestricted, grant.PodSecurityUserns)
		return exitUsage
	}
	cmd := exec.CommandContext(ctx, helper, append(args, target)...)
	cmd.Env = toolserver.KubeEnv(env.Getenv)
	cmd.Stdout, cmd.Stderr = env.Stdout, env.Stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		fmt.Fprintf(env.Stderr, "airlock doctor: running %s: %v\n", helper, err)
		return exitFailure
	}
	return exitOK
}
