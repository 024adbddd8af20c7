package linux_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/airlockhq/airlock/internal/testenv"
	"github.com/airlockhq/airlock/wire"
)

// onlyReader hides every method of r but Read, so the backend cannot see
// its length and relays it as a stream.
type onlyReader struct{ r io.Reader }

func (o onlyReader) Read(p []byte) (int, error) { return o.r.Read(p) }

// TestWarmInputWhole: a warm sandbox's tool reads its input whole, whether
// the claim sent it (in memory and small) or the host relayed it (too big
// for the pipe, or a stream), and a cold sandbox's too.
func TestWarmInputWhole(t *testing.T) {
	d := newDirs(t)
	spec := toolSpec(d)
	b := pooled(t, 2)
	if err := b.Prewarm(spec); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 1, 4096, 64 << 10, 64<<10 + 1, 300 << 10} {
		in := strings.Repeat("a", n)
		for name, r := range map[string]func() io.Reader{
			"buffer": func() io.Reader { return bytes.NewBufferString(in) },
			"reader": func() io.Reader { return strings.NewReader(in) },
			"stream": func() io.Reader { return onlyReader{strings.NewReader(in)} },
		} {
			waitWarm(t, b, spec, 1)
			s := *spec
			var so, se bytes.Buffer
			s.Stdin, s.Stdout, s.Stderr = r(), &so, &se
			res, err := b.Run(context.Background(), &s)
			if err != nil {
				t.Fatalf("%d bytes, %s: %v", n, name, err)
			}
			if !strings.Contains(strings.Join(res.Isolation.Features, " "), "warm") {
				t.Fatalf("%d bytes, %s: not warm: %v", n, name, res.Isolation.Features)
			}
			if res.ExitCode != 7 || so.String() != "pong: "+in {
				t.Fatalf("%d bytes, %s: exit %d, stdout %d bytes (%.40q), stderr %q; want exit 7 and pong of the input",
					n, name, res.ExitCode, so.Len(), so.String(), se.String())
			}
		}
	}
}

// TestToolStopRightAfterReady: a stop that reaches a tool-mode sandbox
// as soon as it is ready cancels the tool, which still answers (the init
// asked for SIGTERM before its call arrived), in a warm sandbox and a
// cold one.
func TestToolStopRightAfterReady(t *testing.T) {
	d := newDirs(t)
	spec := toolSpec(d)
	spec.Limits.Wall = 120 * time.Second
	b := pooled(t, 1)
	if err := b.Prewarm(spec); err != nil {
		t.Fatal(err)
	}
	frame := toolFrameT(t, "shell", map[string]string{"command": "sleep 60; echo finished"}, d.W)
	for _, warmWanted := range []bool{true, false} {
		be := b
		if warmWanted {
			waitWarm(t, b, spec, 1)
		} else {
			be = backend(t)
		}
		stop := make(chan struct{})
		close(stop)
		s := *spec
		var so, se bytes.Buffer
		s.Stdin, s.Stdout, s.Stderr, s.Stop = strings.NewReader(frame), &so, &se, stop
		res, err := be.Run(context.Background(), &s)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(strings.Join(res.Isolation.Features, " "), "warm"); got != warmWanted {
			t.Fatalf("warm %v, want %v", got, warmWanted)
		}
		if res.ExitCode != 0 || res.Signal != 0 {
			t.Fatalf("warm %v: exit %d signal %d, stderr %q: the init did not hand the stop to the tool", warmWanted, res.ExitCode, res.Signal, se.String())
		}
		f, err := wire.ReadFrame(&so)
		if err != nil {
			t.Fatal(err)
		}
		var out wire.ToolOutput
		if err := json.Unmarshal(f, &out); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(out.Content, "finished") {
			t.Fatalf("warm %v: the command ran to its end despite the stop: %q", warmWanted, out.Content)
		}
		t.Logf("warm %v: %q", warmWanted, out.Content)
	}
}

// TestWarmLandlockInForce: a warm sandbox's Landlock ruleset, made before
// its claim, is in force on the tool and the commands it starts, as a
// cold sandbox's is: /proc/self/comm is writable by the mounts (procfs is
// mounted read-write) but lies under Landlock's read-only "/".
func TestWarmLandlockInForce(t *testing.T) {
	d := newDirs(t)
	spec := toolSpec(d)
	b := pooled(t, 1)
	if err := b.Prewarm(spec); err != nil {
		t.Fatal(err)
	}
	script := "sh:if (echo x > /proc/self/comm) 2>/dev/null; then echo comm-written; else echo comm-refused; fi; if echo y > " + d.W + "/ok; then echo grant-written; fi"
	for _, warmWanted := range []bool{true, false} {
		be := b
		if warmWanted {
			waitWarm(t, b, spec, 1)
		} else {
			be = backend(t)
		}
		o := callWith(t, be, spec, script)
		if warm(o) != warmWanted {
			t.Fatalf("warm %v, want %v", warm(o), warmWanted)
		}
		if contains(o.res.Isolation.Missing, "landlock") {
			testenv.RequireFeature(t, "this kernel has no Landlock")
		}
		if o.stdout != "comm-refused\ngrant-written\n" {
			t.Fatalf("warm %v: stdout %q stderr %q, want the write to /proc refused by Landlock and the one to the grant allowed", warmWanted, o.stdout, o.stderr)
		}
	}
}
