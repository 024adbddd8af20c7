package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestExecRemoteRefusesInheritEnv: remote hands get no environment from the
// broker, so airlock exec refuses --inherit-env with --remote as it refuses
// --env, naming why, instead of running the command without the variable
// it was asked to pass (a build that then runs without its CI=1, or a
// command that says "not set" for what the user passed by name).
func TestExecRemoteRefusesInheritEnv(t *testing.T) {
	t.Setenv("AIRLOCK_STATE_DIR", t.TempDir())
	t.Setenv("AIRLOCK_TEST_PASSED_ON", "from-the-host")
	dir := t.TempDir()
	for _, flag := range [][]string{{"--env", "AIRLOCK_TEST_PASSED_ON=from-the-host"}, {"--inherit-env", "AIRLOCK_TEST_PASSED_ON"}} {
		var stdout, stderr bytes.Buffer
		args := append([]string{"exec", "--root", dir, "--remote", "stdio:airlock tool-server --allow-unenforced-limits --root " + dir}, execFlags()...)
		args = append(append(args, flag...), "--", "sh", "-c", `echo "got=$AIRLOCK_TEST_PASSED_ON"`)
		code := Main(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
		if stdout.String() == "got=\n" || code == 0 {
			t.Errorf("%s with --remote: exit %d, stdout %q: the command ran without the variable; stderr:\n%s", flag[0], code, &stdout, &stderr)
			continue
		}
		if !strings.Contains(stderr.String(), "with --remote: the hands get no environment") {
			t.Errorf("%s with --remote: exit %d, stderr does not say why:\n%s", flag[0], code, &stderr)
		}
	}
}
