package broker_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/sandbox"
)

// quotingBackend refuses every spec with an error that quotes the
// spec's environment, as a careless backend's error might.
type quotingBackend struct{}

func (quotingBackend) Report() sandbox.Report { return sandbox.Report{Backend: "failing"} }

func (quotingBackend) Run(_ context.Context, spec *sandbox.Spec) (*sandbox.Result, error) {
	return nil, fmt.Errorf("cannot build the sandbox for env %q: %w", spec.Env, &sandbox.MissingFeatureError{Feature: "user namespaces", Fix: "sysctl"})
}

// TestExecFailureIsRecorded: a command whose sandbox cannot be built is
// recorded with class "sandbox" and the reason, the error reaches the
// caller unchanged for errors.As, and the values of the command's
// environment appear nowhere in the records, not even in the detail of an
// error that quoted them.
func TestExecFailureIsRecorded(t *testing.T) {
	f := newFixture(t, grant.Limits{})
	s := f.open(t, quotingBackend{}, nil)
	env := append(append([]string(nil), broker.BaseEnv...), "API_KEY=value-of-the-key-123")
	res, err := s.Exec(context.Background(), &broker.Exec{Command: []string{"true"}, Env: env, Limits: f.grant.LimitsFor("shell")})
	var mf *sandbox.MissingFeatureError
	if res != nil || !errors.As(err, &mf) {
		t.Fatalf("Exec = %v, %v; want no result and the MissingFeatureError", res, err)
	}
	recs := calls(records(t, f.records))
	if len(recs) != 1 || recs[0].Tool != broker.ExecTool || recs[0].Class != broker.ClassSandbox || !strings.Contains(recs[0].Detail, "user namespaces") {
		t.Fatalf("records %+v; want one exec record of class sandbox naming the missing feature", recs)
	}
	if got := string(recs[0].Args); got != `{"command":["true"],"env":["API_KEY"]}` {
		t.Errorf("record args %s; want the command and the variable's name only", got)
	}
	err = filepath.WalkDir(f.records, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if b, _ := os.ReadFile(p); strings.Contains(string(b), "value-of-the-key-123") {
			t.Errorf("%s holds the variable's value:\n%s", p, b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestOneCallRecordsBeforeReturn: in a one-call session (airlock exec and
// call), whose call's record is fsynced with the session's close, the
// record is in the file all the same when the call returns, and the close
// record follows it at Close.
func TestOneCallRecordsBeforeReturn(t *testing.T) {
	f := newFixture(t, grant.Limits{})
	s := f.open(t, quotingBackend{}, func(o *broker.Options) { o.OneCall = true })
	if _, err := s.Exec(context.Background(), &broker.Exec{Command: []string{"true"}, Env: broker.BaseEnv, Limits: f.grant.LimitsFor("shell")}); err == nil {
		t.Fatal("Exec on a failing backend succeeded")
	}
	if recs := calls(records(t, f.records)); len(recs) != 1 || recs[0].Tool != broker.ExecTool {
		t.Fatalf("records when Exec returns %+v; want the exec's", recs)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	recs := records(t, f.records)
	if last := recs[len(recs)-1]; last.Kind != audit.KindSession || last.Decision != "close" {
		t.Errorf("last record %+v; want the session's close", last)
	}
}
