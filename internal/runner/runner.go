// Package runner is the one-shot process that runs exactly one tool call. It
// reads one wire frame (a ToolInput) from stdin, runs the tool, writes one
// frame (a ToolOutput) to stdout and exits with a wire exit code. It runs
// inside the sandbox; it imports only wire and tool.
//
//	broker                         runner
//	  |--- frame: ToolInput ------>|  parse strictly, look up the tool, parse args
//	  |                            |  run the tool
//	  |<-- frame: ToolOutput ------|  exit 0
//	  |<-- stderr: ErrorReport ----|  exit 64..74 on failure (no frame)
package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/airlockhq/airlock/tool"
	"github.com/airlockhq/airlock/wire"
)

// Mode is the hidden argv[1] that starts the runner: `airlock __runner`.
const Mode = "__runner"

// Main is the entry point for `airlock __runner ARGS...`; args excludes the mode.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) != 0 {
		return report(stderr, wire.ExitUsage, fmt.Errorf("the runner takes no arguments, got %q", args))
	}
	return Run(stdin, stdout, stderr)
}

// Run reads one ToolInput from stdin, runs it and writes one ToolOutput to
// stdout, returning the exit code. SIGTERM cancels the tool.
func Run(stdin io.Reader, stdout, stderr io.Writer) int {
	return RunContext(context.Background(), stdin, stdout, stderr)
}

// RunContext is Run with the tool also cancelled when ctx is done (a
// stop its caller heard before the runner could).
func RunContext(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer stop()
	// With SIGPIPE notified (not ignored, which children would inherit), a
	// broker that stopped reading makes the write fail with EPIPE, reported
	// as ExitWriteOutput, instead of killing the runner silently.
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE)
	defer signal.Stop(pipe)
	return run(ctx, nil, nil, nil, stdin, stdout, stderr)
}

// RunStarting is Run for a runner that is a sandbox's init: the tools
// start their commands through start (tool.Env.Start). The init asks for
// SIGTERM, SIGINT and SIGPIPE itself, before its call arrives, and ends
// ctx at SIGTERM or SIGINT: enabling and disabling a signal here would
// cost the call a round trip to the runtime's signal thread each. hidden
// are the sandbox's placeholders (tool.Env.Hidden), which the init knows:
// the runner does not read wire.PlaceholderList then; candidates are the
// paths where other calls may make placeholders meanwhile
// (tool.Env.Candidates), checked for the mark when a tool meets one.
func RunStarting(ctx context.Context, start func(func() error) error, hidden, candidates []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return run(ctx, start, &hidden, candidates, stdin, stdout, stderr)
}

// run runs one call; hidden, when not nil, is the sandbox's placeholders
// (else wire.PlaceholderList is read), and candidates where more may come.
func run(ctx context.Context, start func(func() error) error, hidden *[]string, candidates []string, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	frame, err := wire.ReadFrame(stdin)
	if err != nil {
		return report(stderr, wire.ExitBadInput, fmt.Errorf("reading input frame: %w", err))
	}
	var in wire.ToolInput
	if err := wire.DecodeStrict(frame, &in); err != nil {
		return report(stderr, wire.ExitBadInput, fmt.Errorf("decoding tool input: %w", err))
	}
	def, ok := tool.Find(in.Tool)
	if !ok {
		return report(stderr, wire.ExitUnknownTool, fmt.Errorf("unknown tool %q", in.Tool))
	}
	args, err := def.Parse(in.Args)
	if err != nil {
		return report(stderr, wire.ExitBadArgs, err)
	}
	env, err := envFrom(in.Context, hidden, candidates)
	if err != nil {
		return report(stderr, wire.ExitBadInput, err)
	}
	env.Start = start
	var out wire.ToolOutput
	func() {
		defer func() {
			if r := recover(); r != nil {
				code = report(stderr, wire.ExitInternal, fmt.Errorf("tool %s panicked: %v", in.Tool, r))
			}
		}()
		out = def.Run(ctx, env, args)
	}()
	if code != 0 {
		return code
	}
	// JSON carries only UTF-8: bytes that are not stay visible as \xNN
	// rather than becoming U+FFFD in the encoder.
	out.Content = wire.ValidUTF8(out.Content)
	data, err := encodeOutput(out)
	if err == nil && 4+len(data) > frameBudget(env.Limits) { // 4: the frame's length
		fitContent(&out, contentBudget(env.Limits))
		data, err = encodeOutput(out)
	}
	if err != nil {
		return report(stderr, wire.ExitInternal, fmt.Errorf("encoding tool output: %w", err))
	}
	if err := wire.WriteFrame(stdout, data); err != nil {
		return report(stderr, wire.ExitWriteOutput, err)
	}
	return wire.ExitOK
}

// encodeOutput is the JSON of a result's frame. '<', '>' and '&' are
// written as themselves, not as six-byte escapes for HTML: a frame is
// never HTML, and an HTML file would cost six times its size.
func encodeOutput(out wire.ToolOutput) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// frameSlack is what a frame may spend beside its content.
const frameSlack = 64 << 10

// frameBudget is the largest frame the runner writes for limits l: what the
// broker lets the call's sandbox write (wire.SandboxOutputBytes, from the
// same limit) and at most wire.MaxFrameSize. A tool caps its content's
// bytes, but their JSON escapes cost up to six times as much (a control
// character is \u00XX), so a result whose frame would pass it has its
// content cut to fit, and says so.
func frameBudget(l wire.ToolLimits) int {
	return int(min(wire.SandboxOutputBytes(l.OutputBytes), wire.MaxFrameSize))
}

// contentBudget is what the encoded content of a cut result may cost,
// leaving frameSlack for the rest of the frame.
func contentBudget(l wire.ToolLimits) int { return frameBudget(l) - frameSlack }

// fitContent cuts out.Content, at a character, to what encodes in at most
// budget bytes of JSON with the note saying what was cut, and marks out
// truncated.
func fitContent(out *wire.ToolOutput, budget int) {
	const note = "\n[truncated: %d more bytes not shown: with their JSON escapes they would not fit the output limit]"
	room := budget - len(note) - 24 // the note, its count and their escapes
	cost, cut := 0, len(out.Content)
	for i, r := range out.Content {
		c := jsonCost(r)
		if cost+c > room {
			cut = i
			break
		}
		cost += c
	}
	omitted := len(out.Content) - cut
	if omitted == 0 {
		return
	}
	out.Content = out.Content[:cut] + fmt.Sprintf(note, omitted)
	out.Truncated = true
	out.Meta.OmittedBytes += int64(omitted)
}

// jsonCost is at least what encodeOutput spends on r in a string: two
// bytes for the short escapes, six for \u00XX and for the line and
// paragraph separators (and U+FFFD's escape, were r not valid).
func jsonCost(r rune) int {
	switch {
	case r == '"' || r == '\\' || r == '\n' || r == '\r' || r == '\t':
		return 2
	case r < 0x20 || r == '\u2028' || r == '\u2029' || r == utf8.RuneError:
		return 6
	}
	return utf8.RuneLen(r)
}

func envFrom(c wire.CallContext, hidden *[]string, candidates []string) (tool.Env, error) {
	env := tool.Env{Root: c.Root, Cwd: c.Cwd, Limits: c.Limits, Secrets: c.Secrets, Egress: c.Egress, Search: c.Search, CallID: c.CallID}
	if env.Root == "" {
		env.Root = "/"
	}
	if hidden != nil {
		env.Hidden = *hidden
	} else if b, err := os.ReadFile(wire.PlaceholderList); err == nil {
		env.Hidden = strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	}
	if len(candidates) > 0 && isPlaceholder != nil {
		env.Candidates = make(map[string]bool, len(candidates))
		for _, p := range candidates {
			env.Candidates[p] = true
		}
		env.IsPlaceholder = isPlaceholder
	}
	if env.Cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return env, fmt.Errorf("finding the working directory: %w", err)
		}
		env.Cwd = wd
	}
	return env, nil
}

// report writes an ErrorReport to stderr and returns code.
func report(stderr io.Writer, code int, err error) int {
	b, _ := json.Marshal(wire.ErrorReport{Code: code, Error: err.Error()})
	fmt.Fprintf(stderr, "%s\n", b)
	return code
}

// Warm does, on constant data, the decoding and encoding every call starts
// and ends with, so that a sandbox waiting in a pool for its call has paid
// for their first use (encoding/json's per-type caches, the tools' schemas
// and argument decoders, the code paged in) before the call's clock
// starts. Its one tool run is a read_file of this process's own status in
// /proc (warmRead); it reads no other file and writes none.
func Warm() {
	warmRead()
	in, err := json.Marshal(wire.ToolInput{Tool: "read_file", Args: json.RawMessage(`{"path":"/warm","offset":1,"limit":1}`),
		Context: wire.CallContext{CallID: "call_warm", Session: "ses_warm", Root: "/", Cwd: "/", Secrets: map[string]string{"WARM": "warm"},
			Limits: wire.ToolLimits{OutputBytes: 1, FileBytes: 1, TimeoutMS: 1}}})
	if err != nil {
		return
	}
	var f bytes.Buffer
	if wire.WriteFrame(&f, in) != nil {
		return
	}
	frame, err := wire.ReadFrame(&f)
	if err != nil {
		return
	}
	var got wire.ToolInput
	if wire.DecodeStrict(frame, &got) != nil {
		return
	}
	for _, name := range tool.Names() {
		if def, ok := tool.Find(name); ok {
			_, _ = def.Parse(nil) // required fields are missing: decoding is what warms
		}
	}
	if def, ok := tool.Find(got.Tool); ok {
		_, _ = def.Parse(got.Args)
	}
	// An answer of warmOutputBytes: the encoder's buffer, which it keeps
	// for the next encoding, has then grown past a small file's answer
	// (growing it on the call's clock cleared fresh pages, a page fault
	// each: ~35 us of a 4 KiB read_file's answer).
	n := 1
	data, err := encodeOutput(wire.ToolOutput{Content: wire.ValidUTF8(strings.Repeat("warm\n", warmOutputBytes/5)), Meta: wire.Meta{ExitCode: &n, Bytes: 5}})
	if err != nil {
		return
	}
	_ = wire.WriteFrame(io.Discard, data)
}

// warmOutputBytes is the size of the answer Warm encodes.
const warmOutputBytes = 16 << 10

// warmRead runs read_file once, on /proc/PID/status of this process, so
// that the tool's own first use is paid before a call too: opening a root,
// the runtime's interface table (its first errors.Is grows the table of
// this large binary, about 30 us), the read loop's code. The file is the
// process's own and read-only: a warm sandbox is not locked down yet, and
// its working tree not bound. It returns the tool's output (for tests).
func warmRead() wire.ToolOutput {
	def, ok := tool.Find("read_file")
	if !ok {
		return wire.ToolOutput{IsError: true, Content: "no read_file tool"}
	}
	args, err := def.Parse(json.RawMessage(`{"path":"status"}`))
	if err != nil {
		return wire.ToolOutput{IsError: true, Content: err.Error()}
	}
	dir := "/proc/" + strconv.Itoa(os.Getpid())
	return def.Run(context.Background(), tool.Env{Root: dir, Cwd: dir}, args)
}
