package linux

import (
	"errors"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/sandbox/linux/initproto"
)

// TestSetupError: each step a runtime refuses becomes a MissingFeatureError
// that names it, keeps the init's own message, and says how to fix it; a
// failure of no known step stays the init's message.
func TestSetupError(t *testing.T) {
	for _, tc := range []struct {
		step, msg, feature, fix string
	}{
		{initproto.StepProc, "mounting /proc: operation not permitted", "a fresh /proc for the sandbox", "systempaths=unconfined"},
		{initproto.StepHostname, "setting the hostname: operation not permitted", "sethostname in the sandbox's UTS namespace", "seccomp=unconfined"},
		{initproto.StepMountNS, "making / private: operation not permitted", "a mount namespace of the sandbox's own", "mount namespaces"},
	} {
		err := setupError(initproto.Status{Error: tc.msg, Step: tc.step})
		var mf *sandbox.MissingFeatureError
		if !errors.As(err, &mf) {
			t.Errorf("step %s: %v is not a MissingFeatureError", tc.step, err)
			continue
		}
		if mf.Feature != tc.feature || !strings.Contains(mf.Reason, tc.msg) || !strings.Contains(mf.Fix, tc.fix) {
			t.Errorf("step %s: %+v, want feature %q, the init's %q, a fix with %q", tc.step, mf, tc.feature, tc.msg, tc.fix)
		}
	}
	err := setupError(initproto.Status{Error: "mounting /tmp: no space left on device"})
	var mf *sandbox.MissingFeatureError
	if errors.As(err, &mf) || err.Error() != "sandbox setup: mounting /tmp: no space left on device" {
		t.Errorf("a failure of no known step: %v", err)
	}
}

// TestHostReady: a report lacking required features refuses naming each
// (fixes said once); missing cgroups and optional features are not its
// business.
func TestHostReady(t *testing.T) {
	b := &Backend{}
	b.reportOnce.Do(func() {
		b.report = sandbox.Report{Features: []sandbox.Feature{
			{Name: "mnt namespace", Required: true, Detail: "stat /proc/self/ns/mnt: no such file or directory", Fix: nsFix},
			{Name: "uts namespace", Required: true, Detail: "stat /proc/self/ns/uts: no such file or directory", Fix: nsFix},
			{Name: "pid namespace", Required: true, Available: true},
			{Name: "cgroups", Required: true, Detail: "none"},
			{Name: "landlock", Detail: "function not implemented"},
		}}
	})
	err := b.hostReady()
	var mf *sandbox.MissingFeatureError
	if !errors.As(err, &mf) || mf.Feature != "mnt namespace, uts namespace" || mf.Fix != nsFix || !strings.Contains(mf.Reason, "/proc/self/ns/uts") {
		t.Fatalf("hostReady: %v", err)
	}
	b = &Backend{}
	b.reportOnce.Do(func() {
		b.report = sandbox.Report{Features: []sandbox.Feature{{Name: "cgroups", Required: true}, {Name: "landlock"}}}
	})
	if err := b.hostReady(); err != nil {
		t.Errorf("only cgroups and optional features missing: %v", err)
	}
}
