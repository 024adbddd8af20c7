package wasm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
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
	def  grant.WasmTool
	mod  *Module
	dirs []toolDir
}

// toolDir is one of a wasm tool's directories, opened when the tool is
// loaded and kept: reopening it by name at each call followed whatever a
// sandbox of the session had put there since ("mv work work.old; ln -s
// /outside work"), and the tool read and wrote outside the grant.
type toolDir struct {
	path     string
	readOnly bool
	root     *os.Root
}

// NewTools loads and compiles g's wasm tools on eng, and opens their
// directories (refusing one a symlink now leads to). A module that cannot
// be read, or whose hash differs from its pin, is an error naming it.
// Close the tools to close the directories.
func NewTools(ctx context.Context, eng *Engine, g *grant.Grant) (_ *Tools, err error) {
	t := &Tools{eng: eng, tools: map[string]*wasmTool{}}
	defer func() {
		if err != nil {
			t.Close()
		}
	}()
	for _, w := range g.WasmTools() {
		b, err := readRegular(w.Module)
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
		wt := &wasmTool{def: w, mod: m}
		t.tools[w.Name] = wt
		for _, set := range []struct {
			list []string
			ro   bool
		}{{w.ReadWrite, false}, {w.ReadOnly, true}} {
			for _, p := range set.list {
				fi, err := os.Lstat(p)
				if errors.Is(err, fs.ErrNotExist) || err == nil && !fi.IsDir() && fi.Mode()&fs.ModeSymlink == 0 {
					// A granted file is not a preopen; a directory
					// missing now, or replaced by a file (a FIFO,
					// say), is not one for this session. A symlink is
					// refused (openDir).
					continue
				}
				r, err := openDir(p)
				if err != nil {
					return nil, fmt.Errorf("wasm tool %q: %w", w.Name, err)
				}
				wt.dirs = append(wt.dirs, toolDir{path: p, readOnly: set.ro, root: r})
			}
		}
	}
	return t, nil
}

// readRegular reads the regular file p. It does not wait on a FIFO (or
// anything else) put in its place: the session's sandboxes may write where
// a tool's module is, and reading a FIFO would hold the session's start
// until a writer came.
func readRegular(p string) ([]byte, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|nonBlock, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", p)
	}
	// Bounded before the hash can be checked: whoever could write there
	// (a sandbox, when the module lies in a writable grant) would have the
	// broker read as much as the file says.
	if fi.Size() > maxModule {
		return nil, fmt.Errorf("%s is larger than %d MiB", p, maxModule>>20)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxModule+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxModule {
		return nil, fmt.Errorf("%s is larger than %d MiB", p, maxModule>>20)
	}
	return b, nil
}

// maxModule bounds the size of a wasm tool's module, as capsules' are.
const maxModule = 256 << 20

// Close closes the tools' directories. Calls must have ended.
func (t *Tools) Close() {
	for _, w := range t.tools {
		for _, d := range w.dirs {
			_ = d.root.Close()
		}
		w.dirs = nil
	}
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
	for _, d := range w.dirs {
		// Moved since it was loaded: the call fails rather than work on
		// the directory under another name (each operation is judged
		// where it really is too, see rootFS).
		if err := stillAt(d.root, d.path); err != nil {
			return nil, fmt.Errorf("wasm tool %q: %w", name, err)
		}
		dirs = append(dirs, Dir{Host: d.path, Guest: filepath.ToSlash(d.path), ReadOnly: d.readOnly, Grant: g, Root: d.root})
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
		// The tool's files are bounded as a sandboxed command's are.
		FileSize: w.def.Limits.FileSize,
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
