package inside

import (
	"context"
	"io"
	"runtime"
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
