package wasm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/airlockhq/airlock/grant"
)

// Tools are a grant's wasm tools ([tools.wasm.NAME]), each module read
// once, checked against its pinned sha256 and compiled once; every call
// runs in a fresh instance. Safe for concurrent use.
//
// A wasm tool's protocol is WASI's plain one: the call's JSON arguments
// on stdin, argv[0] the tool's name, no environment; what it writes to
// stdout is the result, and a non-zero exit status marks it a failure the
// model reads. stderr is kept for the audit record, never shown.
type Tools struct {
	eng   *Engine
	tools map[string]*wasmTool
}

type wasmTool struct {
	def grant.WasmTool
	mod *Module
}

// NewTools loads and compiles g's wasm tools on eng. A module that cannot
// be read, or whose hash differs from its pin, is an error naming it.
func NewTools(ctx context.Context, eng *Engine, g *grant.Grant) (*Tools, error) {
	t := &Tools{eng: eng, tools: map[string]*wasmTool{}}
	for _, w := range g.WasmTools() {
		b, err := os.ReadFile(w.Module)
		if err != nil {
			return nil, fmt.Errorf("wasm tool %q: %w", w.Name, err)
		}
		sum := sha256.Sum256(b)
		if got := hex.EncodeToString(sum[:]); got != w.SHA256 {
			return nil, fmt.Errorf("wasm tool %q: %s has sha256 %s, the grant pins %s; refusing it", w.Name, w.Module, got, w.SHA256)
		}
		m, err := eng.Compile(ctx, b)
		if err != nil {
			return nil, fmt.Errorf("wasm tool %q: %w", w.Name, err)
		}
		t.tools[w.Name] = &wasmTool{def: w, mod: m}
	}
	return t, nil
}

// Result is one call of a wasm tool.
type Result struct {
	Stdout, Stderr []byte
	Outcome        *Outcome
}

// Call runs one call of the named tool in a fresh instance. g judges every
// location of the tool's directories (Dir.Grant): the session's grant,
// with airlock's own files guarded (broker.GuardGrant). It is required.
func (t *Tools) Call(ctx context.Context, g *grant.Grant, name string, args json.RawMessage) (*Result, error) {
	w, ok := t.tools[name]
	if !ok {
		return nil, fmt.Errorf("no wasm tool %q", name)
	}
	if g == nil {
		return nil, fmt.Errorf("wasm tool %q: no grant to judge its files by", name)
	}
	var dirs []Dir
	for _, set := range []struct {
		list []string
		ro   bool
	}{{w.def.ReadWrite, false}, {w.def.ReadOnly, true}} {
		for _, p := range set.list {
			if fi, err := os.Stat(p); err != nil || !fi.IsDir() {
				continue // a granted file is not a preopen
			}
			dirs = append(dirs, Dir{Host: p, Guest: filepath.ToSlash(p), ReadOnly: set.ro, Grant: g})
		}
	}
	var stdout, stderr bytes.Buffer
	o, err := t.eng.Run(ctx, w.mod, &Config{
		Args:   []string{name},
		Dirs:   dirs,
		Stdin:  bytes.NewReader(args),
		Stdout: &stdout,
		Stderr: &limitedBuffer{b: &stderr, left: 64 << 10},
		Memory: w.def.Limits.Memory,
		Time:   w.def.Limits.Time,
		Output: w.def.Limits.Output,
	})
	if err != nil {
		return nil, err
	}
	return &Result{Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), Outcome: o}, nil
}

// limitedBuffer keeps the first left bytes written to it.
type limitedBuffer struct {
	b    *bytes.Buffer
	left int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	n := min(len(p), l.left)
	l.b.Write(p[:n])
	l.left -= n
	return len(p), nil
}

// Names returns the tools' names.
func (t *Tools) Names() []string {
	var out []string
	for n := range t.tools {
		out = append(out, n)
	}
	return out
}

// Detail summarises a result for an audit record.
func (r *Result) Detail() string {
	var parts []string
	if r.Outcome.Trap != "" {
		parts = append(parts, "trap: "+r.Outcome.Trap+" in "+r.Outcome.Func)
	}
	if r.Outcome.ExitCode != 0 {
		parts = append(parts, fmt.Sprintf("exit %d", r.Outcome.ExitCode))
	}
	if s := strings.TrimSpace(string(r.Stderr)); s != "" {
		parts = append(parts, "stderr: "+s)
	}
	return strings.Join(parts, "; ")
}
