package toolserver

import (
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/airlockhq/airlock/internal/egress"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/wire"
)

// Version is the protocol version this build speaks. A peer that offers no
// version both sides speak is refused at connect.
const Version = 1

// Frame types. Every frame has exactly the body its type names.
const (
	TypeCall      = "call"      // broker → hands: run one sandbox
	TypeResult    = "result"    // hands → broker: how a call's sandbox ended
	TypeOutput    = "output"    // hands → broker: a command's stdout/stderr, in order
	TypeInput     = "input"     // broker → hands: a command's stdin, in order
	TypeHeartbeat = "heartbeat" // both ways, every interval
	TypeControl   = "control"   // hello, welcome, cancel, stop, signal, error
)

// Control operations.
const (
	OpHello   = "hello"   // broker → hands, first frame: the versions it speaks
	OpWelcome = "welcome" // hands → broker: the version chosen, who the hands are
	OpCancel  = "cancel"  // broker → hands: kill the call's sandbox now
	OpStop    = "stop"    // broker → hands: Spec.Stop for the call (SIGTERM to every process)
	OpSignal  = "signal"  // broker → hands: Spec.Signal for the call
	OpClose   = "close"   // broker → hands: the reader of the command's stream Stream went away
	OpError   = "error"   // either way: the connection is refused or ends, with a reason
)

// Frame is one message of the protocol: a JSON object carried as one wire
// frame on stdio (4-byte length + JSON, wire.MaxFrameSize at most) or as one
// binary WebSocket message of the same JSON. It is decoded strictly: an
// unknown field, a wrong type or a body other than the one Type names is an
// error, and the connection ends.
type Frame struct {
	Type string `json:"type"`
	// ID names the call a call, result, output, input or control frame is
	// about (the broker's call id for a tool call).
	ID        string     `json:"id,omitempty"`
	Call      *Call      `json:"call,omitempty"`
	Result    *Result    `json:"result,omitempty"`
	Output    *Chunk     `json:"output,omitempty"`
	Input     *Chunk     `json:"input,omitempty"`
	Heartbeat *Heartbeat `json:"heartbeat,omitempty"`
	Control   *Control   `json:"control,omitempty"`
}

// Call is one sandbox to run: the shape of the broker's Spec (paths already
// checked against the broker's grant; the hands check them again against
// theirs) and either a tool call or a command. It carries no environment
// and no secret.
type Call struct {
	// Input is the tool call (the runner's ToolInput, secrets removed);
	// nil for a command.
	Input *wire.ToolInput `json:"input,omitempty"`
	// Command is the program and arguments of a command (exec, background
	// work); empty for a tool call.
	Command []string `json:"command,omitempty"`
	// Stdin says input frames follow for the command's stdin.
	Stdin        bool            `json:"stdin,omitempty"`
	Cwd          string          `json:"cwd"`
	Mounts       []sandbox.Mount `json:"mounts,omitempty"`
	Masks        []string        `json:"masks,omitempty"`
	ReadOnly     []string        `json:"read_only,omitempty"`
	ReadOnlyDirs []string        `json:"read_only_dirs,omitempty"`
	Limits       Limits          `json:"limits"`
	// Network says the broker gave the call an egress proxy (its grant
	// names hosts); the hands then attach their own, enforcing their grant
	// and, where the broker sends them, Hosts and Private.
	Network bool `json:"network,omitempty"`
	// Hosts and Private are the broker's grant's network.hosts and
	// network.private entries for the call: the hands' proxy lets it reach
	// only what their own grant and these both allow. (A broker that sends
	// neither, from before they were sent, is held to the hands' grant
	// alone.)
	Hosts   []string `json:"hosts,omitempty"`
	Private []string `json:"private,omitempty"`
	// Raw carries the paths and arguments that are not UTF-8, exactly:
	// EncodeFrame sets it and DecodeFrame consumes it (callStrings).
	Raw map[int][]byte `json:"raw,omitempty"`
}

// Limits are sandbox.Limits on the wire (durations in milliseconds).
type Limits struct {
	WallMS          int64 `json:"wall_ms,omitempty"`
	MemoryBytes     int64 `json:"memory_bytes,omitempty"`
	Pids            int   `json:"pids,omitempty"`
	OutputBytes     int64 `json:"output_bytes,omitempty"`
	FileBytes       int64 `json:"file_bytes,omitempty"`
	TmpBytes        int64 `json:"tmp_bytes,omitempty"`
	OpenFiles       int   `json:"open_files,omitempty"`
	AllowUnenforced bool  `json:"allow_unenforced,omitempty"`
}

// Result is how a call's sandbox ended, as sandbox.Result, plus the
// runner's streams of a tool call. Error, when set, says the sandbox could
// not be built or the hands refused the call; the other fields are then zero.
type Result struct {
	ExitCode        int            `json:"exit_code"`
	Signal          int            `json:"signal,omitempty"`
	Limit           wire.Limit     `json:"limit,omitempty"`
	LimitsHit       []wire.Limit   `json:"limits_hit,omitempty"`
	OutputTruncated bool           `json:"output_truncated,omitempty"`
	Isolation       wire.Isolation `json:"isolation"`
	SetupUS         int64          `json:"setup_us,omitempty"`
	DurationUS      int64          `json:"duration_us,omitempty"`
	// CPUUS and PeakMemory are what the hands' sandbox measured.
	CPUUS      int64 `json:"cpu_us,omitempty"`
	PeakMemory int64 `json:"peak_memory,omitempty"`
	// Stdout and Stderr are the runner's streams of a tool call (a
	// command's stream as output frames instead).
	Stdout []byte `json:"stdout,omitempty"`
	Stderr []byte `json:"stderr,omitempty"`
	// Chunks is the number of output frames a command sent before its
	// result: the broker writes that many before it returns.
	Chunks int64 `json:"chunks,omitempty"`
	// Egress are the decisions of the hands' egress proxy for the call,
	// for the broker's audit log.
	Egress []egress.Decision `json:"egress,omitempty"`
	// Error is why the call did not run; Missing, when the reason is a
	// feature the hands' host lacks.
	Error   string                       `json:"error,omitempty"`
	Missing *sandbox.MissingFeatureError `json:"missing,omitempty"`
}

// Chunk is a piece of a command's stream. Seq counts from 0 per call and
// direction, so a duplicated chunk is dropped and a reordered one waits.
// An input chunk with EOF set closes the command's stdin.
type Chunk struct {
	Seq    int64  `json:"seq"`
	Stream int    `json:"stream,omitempty"` // output: 1 stdout, 2 stderr
	Data   []byte `json:"data,omitempty"`
	EOF    bool   `json:"eof,omitempty"`
}

// Heartbeat proves the peer alive; Seq counts up per connection.
type Heartbeat struct {
	Seq int64 `json:"seq"`
}

// Control is a connection-level or call-level instruction.
type Control struct {
	Op string `json:"op"`
	// Versions (hello) are the versions the broker speaks; Version
	// (welcome) is the one the hands chose.
	Versions []int `json:"versions,omitempty"`
	Version  int   `json:"version,omitempty"`
	// Identity (welcome) names the hands: their name and this process's
	// instance id, which changes when the hands are rebuilt.
	Identity string `json:"identity,omitempty"`
	// Report (welcome) is what the hands' backend enforces.
	Report *sandbox.Report `json:"report,omitempty"`
	// HeartbeatMS (hello, welcome) is the sender's heartbeat interval.
	HeartbeatMS int64 `json:"heartbeat_ms,omitempty"`
	// Signal (signal) is the signal number for the call's command.
	Signal int `json:"signal,omitempty"`
	// Stream (close) is the command's stream whose reader went away: 1
	// stdout, 2 stderr.
	Stream int `json:"stream,omitempty"`
	// Message (error) says why.
	Message string `json:"message,omitempty"`
}

// ErrFrame wraps every reason a frame was refused.
var ErrFrame = errors.New("toolserver: bad frame")

// DecodeFrame decodes one frame's JSON strictly and checks that it is well
// formed: a known type, the one body that type names, an id where one is
// needed. The payload size is the transport's to cap (wire.MaxFrameSize).
func DecodeFrame(payload []byte) (*Frame, error) {
	if len(payload) == 0 {
		return nil, fmt.Errorf("%w: %w", ErrFrame, wire.ErrEmptyFrame)
	}
	if len(payload) > wire.MaxFrameSize {
		return nil, fmt.Errorf("%w: %w", ErrFrame, wire.ErrFrameTooLarge)
	}
	var f Frame
	if err := wire.DecodeStrict(payload, &f); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFrame, err)
	}
	if err := f.check(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFrame, err)
	}
	if f.Call != nil {
		if err := f.Call.takeRaw(); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrFrame, err)
		}
	}
	return &f, nil
}

// EncodeFrame encodes f after checking it is well formed.
func EncodeFrame(f *Frame) ([]byte, error) {
	if err := f.check(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFrame, err)
	}
	if f.Call != nil {
		if c := f.Call.withRaw(); c != f.Call {
			cp := *f
			cp.Call = c
			f = &cp
		}
	}
	b, err := json.Marshal(f)
	if err != nil {
		return nil, fmt.Errorf("encoding %s frame: %w", f.Type, err)
	}
	if len(b) > wire.MaxFrameSize {
		return nil, fmt.Errorf("%w: %s frame is %d bytes: %w", ErrFrame, f.Type, len(b), wire.ErrFrameTooLarge)
	}
	return b, nil
}

// maxID is the longest call id accepted.
const maxID = 128

func (f *Frame) check() error {
	bodies := 0
	for _, set := range []bool{f.Call != nil, f.Result != nil, f.Output != nil, f.Input != nil, f.Heartbeat != nil, f.Control != nil} {
		if set {
			bodies++
		}
	}
	var ok bool
	needID := true
	switch f.Type {
	case TypeCall:
		ok = f.Call != nil
	case TypeResult:
		ok = f.Result != nil
	case TypeOutput:
		ok = f.Output != nil
	case TypeInput:
		ok = f.Input != nil
	case TypeHeartbeat:
		ok, needID = f.Heartbeat != nil, false
	case TypeControl:
		ok = f.Control != nil
		if ok {
			switch f.Control.Op {
			case OpHello, OpWelcome, OpError:
				needID = false
			case OpCancel, OpStop, OpSignal, OpClose:
			default:
				return fmt.Errorf("unknown control op %q", f.Control.Op)
			}
		}
	default:
		return fmt.Errorf("unknown frame type %q", f.Type)
	}
	if !ok || bodies != 1 {
		return fmt.Errorf("a %s frame carries exactly its %s body", f.Type, f.Type)
	}
	if needID && (f.ID == "" || len(f.ID) > maxID) {
		return fmt.Errorf("a %s frame needs an id of 1 to %d bytes", f.Type, maxID)
	}
	if !needID && f.ID != "" {
		return fmt.Errorf("a %s frame carries no id", f.Type)
	}
	if c := f.Call; c != nil {
		if (c.Input == nil) == (len(c.Command) == 0) {
			return errors.New("a call is either a tool input or a command")
		}
		if c.Input != nil && len(c.Input.Context.Secrets) > 0 {
			return errors.New("a call carries no secrets")
		}
	}
	for _, ch := range []*Chunk{f.Output, f.Input} {
		if ch != nil && ch.Seq < 0 {
			return fmt.Errorf("chunk seq %d is negative", ch.Seq)
		}
	}
	if f.Output != nil && f.Output.Stream != 1 && f.Output.Stream != 2 {
		return fmt.Errorf("output stream %d: want 1 or 2", f.Output.Stream)
	}
	return nil
}

// A Call's paths and command reach the hands byte for byte. JSON replaces
// each byte of a string that is not UTF-8 with U+FFFD, but a path on Linux
// is any bytes: a mask of a nested .git below a directory named "\xff"
// reached the hands as "\ufffd/.git", a path that does not exist, and the
// real one stayed writable there. So EncodeFrame sends every such string
// also as its bytes (base64) in Call.Raw, keyed by its place in the list
// callStrings makes, and DecodeFrame puts them back. (Hands from before
// this refuse a call that carries "raw", an unknown field: they cannot
// mask what they would not read exactly.)

// callStrings lists a pointer to every path and argument of c, in a fixed
// order.
func (c *Call) callStrings() []*string {
	var out []*string
	for i := range c.Mounts {
		out = append(out, &c.Mounts[i].Source, &c.Mounts[i].Target)
	}
	for _, l := range []*[]string{&c.Masks, &c.ReadOnly, &c.ReadOnlyDirs, &c.Command} {
		for i := range *l {
			out = append(out, &(*l)[i])
		}
	}
	return append(out, &c.Cwd)
}

// withRaw returns c, or a copy of it with Raw holding its strings that are
// not UTF-8.
func (c *Call) withRaw() *Call {
	var raw map[int][]byte
	for i, p := range c.callStrings() {
		if !utf8.ValidString(*p) {
			if raw == nil {
				raw = map[int][]byte{}
			}
			raw[i] = []byte(*p)
		}
	}
	if raw == nil {
		return c
	}
	cp := *c
	cp.Raw = raw
	return &cp
}

// takeRaw puts c.Raw's exact strings back in their places.
func (c *Call) takeRaw() error {
	ptrs := c.callStrings()
	for i, b := range c.Raw {
		if i < 0 || i >= len(ptrs) {
			return fmt.Errorf("call: raw string %d of %d", i, len(ptrs))
		}
		*ptrs[i] = string(b)
	}
	c.Raw = nil
	return nil
}
