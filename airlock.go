// Package airlock is the Go API of airlock: it runs an AI agent's tool calls
// (read_file, write_file, edit_file, glob, grep, shell, ...) each in a fresh,
// locked-down sandbox built from a grant, and records every call.
//
// Call Init first in main, then open a Session from a grant, Call tools on
// it, and Close it:
//
//	airlock.Init()
//	s, err := airlock.Open(&airlock.Options{Dir: "/path/to/project"})
//	...
//	defer s.Close()
//	res, err := s.Call(ctx, "shell", map[string]any{"command": "go test ./..."})
//	fmt.Println(res.Text) // what the model reads
//
// A refused call (a path outside the grant, an unknown field) and a tool-level
// failure (no such file) are Results with IsError set; Call returns an error
// only when the session cannot take calls.
package airlock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/sandbox"
	"github.com/airlockhq/airlock/internal/session"
	"github.com/airlockhq/airlock/tool"
	"github.com/airlockhq/airlock/wire"
)

// Errors callers branch on.
var (
	// ErrClosed is returned by Call after Close.
	ErrClosed = broker.ErrClosed
	// ErrAudit is returned when a call's audit record could not be written;
	// the session then refuses every call (it fails closed).
	ErrAudit = broker.ErrAudit
)

// Options configure a session. A nil *Options grants the current directory
// read-write with no network and default limits.
type Options struct {
	// Grant is what the session's calls may touch. When nil, GrantFile is
	// loaded; when that is empty too, Dir is granted read-write.
	Grant *grant.Grant
	// GrantFile is a TOML grant file (see examples/grant.toml).
	GrantFile string
	// Dir is the directory granted read-write when there is no grant
	// (default: the current directory).
	Dir string
	// RecordsDir is where the session's audit log goes (default: where
	// `airlock log` reads: $AIRLOCK_STATE_DIR, else
	// $XDG_STATE_HOME/airlock/sessions, else ~/.local/state/airlock/sessions).
	RecordsDir string
	// Secrets are values for the grant's secrets by name; a secret not given
	// here is read from the source the grant names when a call first needs
	// it (a secret that cannot be read fails only the calls that carry it).
	Secrets map[string]string
	// Unsandboxed runs calls as plain child processes with no isolation; every
	// result says so. Use it only where no sandbox is possible.
	Unsandboxed bool
	// AllowUnenforcedLimits runs calls where the host cannot enforce their
	// memory and process limits (on Linux: no cgroup this user may manage),
	// as the grant key limits.unenforced = "allow" does; every result's
	// label then says which limits were NOT ENFORCED. Without it (and
	// without the grant key) such calls are refused with the reason and
	// how to delegate a cgroup.
	AllowUnenforcedLimits bool
	// MaxConcurrent calls run at once (default 8); MaxQueue more wait (default 64).
	MaxConcurrent, MaxQueue int
	// Pool is the number of sandboxes per tool shape built ahead of time
	// (each still used for one call only). Zero keeps 2 in every tree: a
	// warm sandbox holds nothing in the tree while it waits, and the empty
	// placeholders for missing protected paths (.git, .bashrc, .vscode,
	// ...) are made only while the call that takes it runs. Positive
	// keeps that many, but never more than MaxConcurrent (warm sandboxes
	// past the calls that run at once would never be taken); negative
	// keeps none.
	Pool int
	// Logger receives operational logs; nil discards.
	Logger *slog.Logger
	// Remote, when set, runs the sandboxes on remote hands (see Remote);
	// when nil, the grant's [remote] table may name them. Neither: the
	// sandboxes run on this host.
	Remote *Remote
}

// String describes o for people, as fmt's %v and %+v print it, without the
// values of Secrets (their names stay) or of the remote token: a program
// that prints or logs how it opened a session leaks none of them.
func (o Options) String() string {
	type plain Options // no String method: printed field by field
	c := plain(o)
	if o.Secrets != nil {
		c.Secrets = make(map[string]string, len(o.Secrets))
		for name := range o.Secrets {
			c.Secrets[name] = redacted
		}
	}
	return fmt.Sprintf("%+v", c) // Remote prints itself (Remote.String)
}

// GoString is String, for %#v.
func (o Options) GoString() string { return o.String() }

// LogValue is String, for log/slog's handlers (the JSON one included).
func (o Options) LogValue() slog.Value { return slog.StringValue(o.String()) }

// redacted stands for a secret value where Options and Remote are printed.
const redacted = "[redacted]"

// Session runs tool calls under one grant. It is safe for concurrent use.
type Session struct {
	s *broker.Session
	// parts are the session's backend (a connection to remote hands, the
	// native backend's pool), closed with the session.
	parts *session.Parts
}

// Open starts a session. It returns ErrNoInit when Init was not called.
func Open(opts *Options) (*Session, error) {
	if !initialised.Load() {
		return nil, ErrNoInit
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	g := o.Grant
	if g == nil {
		var err error
		switch {
		case o.GrantFile != "":
			g, err = grant.Load(o.GrantFile)
		default:
			dir := o.Dir
			if dir == "" {
				if dir, err = os.Getwd(); err != nil {
					return nil, fmt.Errorf("airlock: finding the current directory: %w", err)
				}
			}
			if dir, err = filepath.Abs(dir); err != nil {
				return nil, fmt.Errorf("airlock: %w", err)
			}
			g, err = grant.Default(dir)
		}
		if err != nil {
			return nil, fmt.Errorf("airlock: %w", err)
		}
	}
	if o.AllowUnenforcedLimits && !g.AllowsUnenforcedLimits() {
		var err error
		if g, err = g.With(g.BaseDir(), grant.Flags{AllowUnenforcedLimits: true}); err != nil {
			return nil, fmt.Errorf("airlock: %w", err)
		}
	}
	cfg := &session.Config{Grant: g, RecordsDir: o.RecordsDir, Getenv: os.Getenv, Unsandboxed: o.Unsandboxed, Secrets: o.Secrets}
	if o.Remote != nil || g.Remote().Endpoint != "" {
		cfg.Remote = func(local sandbox.Backend, private *[]string) (sandbox.Backend, error) {
			rb, err := remoteBackend(&o, g, local)
			if err != nil {
				return nil, err
			}
			*private = append(*private, remotePrivate(&o, g)...)
			return rb, nil
		}
	}
	p, err := session.Prepare(cfg)
	if err != nil {
		return nil, fmt.Errorf("airlock: %w", err)
	}
	bo := p.Options()
	bo.MaxConcurrent, bo.MaxQueue, bo.Pool, bo.Logger = o.MaxConcurrent, o.MaxQueue, o.Pool, o.Logger
	s, err := broker.Open(bo)
	if err != nil {
		_ = p.Close()
		return nil, fmt.Errorf("airlock: %w", err)
	}
	return &Session{s: s, parts: p}, nil
}

// ID returns the session's id, as the audit log records it ("" for a
// Session that Open did not return).
func (s *Session) ID() string {
	if !s.opened() {
		return ""
	}
	return s.s.ID()
}

// opened reports whether s is a session Open returned: a nil or zero
// Session has nothing to run calls in.
func (s *Session) opened() bool { return s != nil && s.s != nil }

// Result is a completed call.
type Result struct {
	// CallID names the call in the audit log.
	CallID string
	// Text is what the model reads, labelled by airlock.
	Text string
	// IsError marks a tool-level failure, a refusal, or a call that did not
	// complete (time, memory, cancellation).
	IsError bool
	// Refused reports that the grant or admission control refused the call;
	// nothing ran.
	Refused bool
	// Truncated reports that Text was cut at the output cap.
	Truncated bool
	// Class is the outcome: "ok", "refused", "timeout", "memory",
	// "processes", "output", "killed", "cancelled", "runner", "sandbox" or
	// "lost" (remote hands lost with the call in flight: outcome unknown):
	// the wire.Class constants.
	Class wire.Class
	// Meta holds structured data: exit code, isolation that ran, ...
	Meta wire.Meta
}

// Call runs one tool call. args is the tool's arguments: a json.RawMessage,
// []byte or string of JSON, or any value that marshals to a JSON object.
// A nil ctx is an error (nothing runs), as after Close; so is a call on a
// nil or zero Session (ErrClosed).
func (s *Session) Call(ctx context.Context, toolName string, args any) (*Result, error) {
	if !s.opened() {
		return nil, ErrClosed
	}
	raw, err := rawArgs(args)
	if err != nil {
		return nil, fmt.Errorf("airlock: %s arguments: %w", toolName, err)
	}
	res, err := s.s.Call(ctx, toolName, raw)
	if err != nil {
		return nil, err
	}
	return &Result{
		CallID: res.CallID, Text: res.Output.Content, IsError: res.Output.IsError, Refused: res.Refused(),
		Truncated: res.Output.Truncated, Class: res.Class, Meta: res.Output.Meta,
	}, nil
}

func rawArgs(args any) (json.RawMessage, error) {
	switch a := args.(type) {
	case nil:
		return json.RawMessage("{}"), nil
	case json.RawMessage:
		return a, nil
	case []byte:
		return json.RawMessage(a), nil
	case string:
		return json.RawMessage(a), nil
	}
	b, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	if len(b) == 0 || b[0] != '{' {
		return nil, errors.New("must be a JSON object")
	}
	return b, nil
}

// Close ends every call in flight and closes the records. It is idempotent,
// and does nothing for a nil or zero Session.
func (s *Session) Close() error {
	if !s.opened() {
		return nil
	}
	err := s.s.Close()
	if cerr := s.parts.Close(); err == nil {
		err = cerr
	}
	return err
}

// Tool describes one tool for a model.
type Tool struct {
	Name        string
	Description string
	// Schema is the JSON schema of the tool's arguments.
	Schema json.RawMessage
}

// Tools returns every tool airlock has, in a fixed order.
func Tools() []Tool {
	var out []Tool
	for _, d := range tool.All() {
		out = append(out, Tool{Name: d.Name, Description: d.Description, Schema: d.Schema})
	}
	return out
}
