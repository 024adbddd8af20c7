package tool

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/airlockhq/airlock/wire"
)

const shellDescription = `Runs a command with /bin/sh -c and returns its output: stdout and stderr interleaved in the order written, then a last line "[exit N]" or "[killed by signal N]". A non-zero exit is reported, not refused.
cwd is the directory to run in (default: the working directory). timeout is in seconds (1-600, default 120, never more than the call's time limit); on timeout the whole process group is killed and "[timed out after Ns]" is added. stdin is /dev/null; nothing is interactive.
run_in_background: start the command as background work and return its work id at once; check it with the background_command tool.
Limits: output is capped (1 MiB by default): the start and the end are kept with "[... N bytes cut ...]" between; a command writing more than 8 times the cap is killed. The command ends when the shell exits: leftover background processes holding the output open are killed.`

// ShellArgs are shell's arguments.
type ShellArgs struct {
	Command         string `json:"command" desc:"the command line, run by /bin/sh -c"`
	Cwd             string `json:"cwd,omitempty" desc:"the directory to run in (default: the working directory)"`
	Timeout         int    `json:"timeout,omitempty" desc:"seconds before the command is killed (default 120)" min:"1" max:"600"`
	RunInBackground bool   `json:"run_in_background,omitempty" desc:"start as background work and return a work id instead of waiting"`
}

const maxTimeoutSeconds = 600

func (a *ShellArgs) validate() error {
	if strings.TrimSpace(a.Command) == "" {
		return fmt.Errorf("field %q: must not be empty, got %q", "command", a.Command)
	}
	if strings.IndexByte(a.Command, 0) >= 0 {
		return fmt.Errorf("field %q: must not contain a NUL byte", "command")
	}
	if err := checkPath("cwd", a.Cwd, true); err != nil {
		return err
	}
	if a.Timeout < 0 || a.Timeout > maxTimeoutSeconds {
		return fmt.Errorf("field %q: must be between 1 and %d seconds, got %d", "timeout", maxTimeoutSeconds, a.Timeout)
	}
	return nil
}

// Access reports the working directory and that the call runs commands.
func (a ShellArgs) Access() Access {
	cwd := a.Cwd
	if cwd == "" {
		cwd = "."
	}
	return Access{Paths: []PathAccess{{Path: cwd}}, Exec: true}
}

var shell = define("shell", shellDescription, runShell)

func runShell(ctx context.Context, env Env, a ShellArgs) wire.ToolOutput {
	cwd := a.Cwd
	if cwd == "" {
		cwd = "."
	}
	t, err := resolve(env, "cwd", cwd)
	if err != nil {
		return Failure("%v", err)
	}
	fi, err := t.root.Stat(t.rel)
	t.close()
	switch {
	case err != nil:
		return Failure("%v", t.describe(err))
	case !fi.IsDir():
		return Failure("field %q: %s is %s, not a directory", "cwd", t.shown, kindOf(fi.Mode()))
	}
	if a.RunInBackground {
		// Background work is the broker's (it outlives the call's sandbox):
		// the broker answers such a call itself and never sends it here.
		return Failure("field %q: background commands are not available in this context", "run_in_background")
	}
	return runCommand(ctx, a.Command, t.shown, shellTimeout(env, a.Timeout), outputCap(env), env.Start)
}

// shellTimeout is min(the requested timeout, the call's limit), default 120 s.
func shellTimeout(env Env, seconds int) time.Duration {
	d := defaultTimeout
	if seconds > 0 {
		d = time.Duration(seconds) * time.Second
	}
	if ms := env.Limits.TimeoutMS; ms > 0 && time.Duration(ms)*time.Millisecond < d {
		d = time.Duration(ms) * time.Millisecond
	}
	return d
}

// A headTail keeps the first and the last bytes written to it, up to a cap,
// and counts the rest.
type headTail struct {
	head  []byte
	tail  []byte // a ring of the last len(tail) bytes after head, once full
	next  int    // where the ring writes next
	total int64
	hcap  int
	tcap  int
}

func newHeadTail(limit int) *headTail {
	h := limit / 2
	return &headTail{hcap: h, tcap: limit - h}
}

func (b *headTail) Write(p []byte) (int, error) {
	n := len(p)
	b.total += int64(n)
	if room := b.hcap - len(b.head); room > 0 {
		k := min(room, len(p))
		b.head = append(b.head, p[:k]...)
		p = p[k:]
	}
	for len(p) > 0 {
		if len(b.tail) < b.tcap {
			k := min(b.tcap-len(b.tail), len(p))
			b.tail = append(b.tail, p[:k]...)
			p = p[k:]
			continue
		}
		if b.tcap == 0 {
			break
		}
		k := copy(b.tail[b.next:], p)
		b.next = (b.next + k) % b.tcap
		p = p[k:]
	}
	return n, nil
}

// cut is how many bytes were dropped between head and tail.
func (b *headTail) cut() int64 { return b.total - int64(len(b.head)+len(b.tail)) }

func (b *headTail) String() string {
	tail := append(append([]byte(nil), b.tail[b.next:]...), b.tail[:b.next]...)
	cut := b.cut()
	if cut == 0 {
		return string(b.head) + string(tail)
	}
	head := b.head
	for i := 0; i < utf8.UTFMax-1 && len(head) > 0; i++ {
		if r, size := utf8.DecodeLastRune(head); r != utf8.RuneError || size != 1 {
			break
		}
		head = head[:len(head)-1]
		cut++
	}
	for i := 0; i < utf8.UTFMax && len(tail) > 0 && !utf8.RuneStart(tail[0]); i++ {
		tail = tail[1:]
		cut++
	}
	return string(head) + "\n[... " + strconv.FormatInt(cut, 10) + " bytes cut ...]\n" + string(tail)
}
