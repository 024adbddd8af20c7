package inside

import (
	"context"
	"io"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func TestMainRefusesBadArguments(t *testing.T) {
	tool := func(context.Context, io.Reader, io.Writer, io.Writer) int { t.Error("the tool ran"); return 0 }
	for _, args := range [][]string{nil, {"--deadline", "0"}, {"--bogus"}} {
		if code := Main(args, tool); code != ExitSetup {
			t.Errorf("Main(%q) = %d, want %d", args, code, ExitSetup)
		}
	}
}

func TestCommandStatus(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no /bin/sh")
	}
	for _, tc := range []struct {
		argv []string
		want int
	}{
		{[]string{"/bin/sh", "-c", "exit 3"}, 3},
		{[]string{"/bin/sh", "-c", "kill -KILL $$"}, 137},
		{[]string{"/no/such/program"}, 127},
	} {
		if got := command(tc.argv, nil); got != tc.want {
			t.Errorf("command(%q) = %d, want %d", tc.argv, got, tc.want)
		}
	}
}

// TestEnvRoundTrip: the environment pipe carries any value (a newline, an
// '=' included) as one variable, and refuses what is no KEY=VALUE.
func TestEnvRoundTrip(t *testing.T) {
	env := []string{"A=1", "MULTI=a\nb=c", "EMPTY=", "EQ==x="}
	data, err := EncodeEnv(env)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeEnv(data)
	if err != nil || !slices.Equal(got, env) {
		t.Errorf("DecodeEnv(EncodeEnv(%q)) = %q, %v", env, got, err)
	}
	for _, bad := range []string{"NOEQUALS", "=x", "A=b\x00C=d"} {
		if _, err := EncodeEnv([]string{bad}); err == nil || !strings.Contains(err.Error(), "environment entry") {
			t.Errorf("EncodeEnv(%q): err = %v, want one naming the entry", bad, err)
		}
	}
	if _, err := DecodeEnv([]byte("A=1")); err == nil {
		t.Error("DecodeEnv took an entry without its NUL")
	}
}
