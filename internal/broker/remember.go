package broker

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"unicode/utf8"

	"github.com/airlockhq/airlock/grant"
)

// memoryDir holds, below the records directory (which no sandbox can see),
// the protected paths each read-write tree's sessions found, one file per
// tree: the scan for nested protected paths stops after 20,000 entries, so
// a sandbox that fills its tree could otherwise push an existing nested
// repository past that bound and have it writable from the next session on.
const memoryDir = ".protected-memory"

// maxRemembered bounds what one tree's file keeps (a variable for tests).
var maxRemembered = 20000

// rememberProtected returns g protecting, besides what its own scan found,
// what earlier sessions recorded for its read-write trees and still holds
// (grant.Remember), and records the union for the next session. A memory
// that cannot be read or written is logged and leaves g as it was.
func rememberProtected(records string, g *grant.Grant, logger *slog.Logger) *grant.Grant {
	trees := g.WritableTrees()
	if len(trees) == 0 {
		return g
	}
	dir := filepath.Join(records, memoryDir)
	var earlier []grant.ProtectedPath
	held := make(map[string][]byte, len(trees)) // each tree's memory as read
	for _, t := range trees {
		b, err := os.ReadFile(memoryFile(dir, t))
		held[t] = b
		if err != nil {
			if !os.IsNotExist(err) {
				logger.Warn("reading the protected paths earlier sessions found", "tree", t, "err", err)
			}
			continue
		}
		list, err := decodeMemory(b)
		if err != nil {
			logger.Warn("reading the protected paths earlier sessions found", "tree", t, "err", err)
			continue
		}
		earlier = append(earlier, list...)
	}
	g = g.Remember(earlier)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		logger.Warn("recording the protected paths this session found", "err", err)
		return g
	}
	before := make(map[string]bool, len(earlier))
	for _, p := range earlier {
		before[p.Path] = true
	}
	for _, t := range trees {
		list := g.NestedProtected(t)
		// Bounded, so kept in order of worth: repositories and set-ID
		// files first, and of each kind what earlier sessions recorded
		// before this one's new finds, so that names a sandbox makes by
		// the thousand cannot push out what existed before it.
		rank := func(p grant.ProtectedPath) int {
			r := 0
			if !p.KeepFirst() {
				r += 2
			}
			if !before[p.Path] {
				r++
			}
			return r
		}
		slices.SortStableFunc(list, func(a, b grant.ProtectedPath) int { return cmp.Compare(rank(a), rank(b)) })
		if len(list) > maxRemembered {
			list = list[:maxRemembered]
		}
		if err := writeMemory(memoryFile(dir, t), list, held[t]); err != nil {
			logger.Warn("recording the protected paths this session found", "tree", t, "err", err)
		}
	}
	return g
}

// memoryFile names the memory of the tree t.
func memoryFile(dir, t string) string {
	sum := sha256.Sum256([]byte(t))
	return filepath.Join(dir, hex.EncodeToString(sum[:16])+".json")
}

// writeMemory replaces the file p with list, whole or not at all, unless
// it holds that already (was, its content as read): most sessions find
// what the last one did, and a file made and renamed into place costs an
// inode allocated and one freed on every session's start.
func writeMemory(p string, list []grant.ProtectedPath, was []byte) error {
	b, err := encodeMemory(list)
	if err != nil {
		return err
	}
	if was != nil && bytes.Equal(b, was) {
		return nil
	}
	f, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	if err := os.Rename(f.Name(), p); err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("replacing %s: %w", p, err)
	}
	return nil
}

// storedPath is a protected path as a memory file keeps it: a path that is
// not UTF-8 as its bytes (base64 in JSON), since a JSON string cannot
// carry such bytes and a path may hold any: encoding/json wrote U+FFFD for
// them, and the next session protected a path that is not there instead of
// the one a sandbox had named so.
type storedPath struct {
	PathBytes []byte `json:"path_bytes,omitempty"` // a path that is not UTF-8
	Path      string `json:"path,omitempty"`
	Name      string `json:"name"`
	Dir       bool   `json:"dir"`
}

// encodeMemory is a memory file's content for list.
func encodeMemory(list []grant.ProtectedPath) ([]byte, error) {
	out := make([]storedPath, len(list))
	for i, p := range list {
		out[i] = storedPath{Path: p.Path, Name: p.Name, Dir: p.Dir}
		if !utf8.ValidString(p.Path) {
			out[i] = storedPath{PathBytes: []byte(p.Path), Name: p.Name, Dir: p.Dir}
		}
	}
	return json.Marshal(out)
}

// decodeMemory reads a memory file's content, of this form or the older one.
func decodeMemory(b []byte) ([]grant.ProtectedPath, error) {
	var in []storedPath
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, err
	}
	out := make([]grant.ProtectedPath, len(in))
	for i, p := range in {
		path := p.Path
		if p.PathBytes != nil {
			path = string(p.PathBytes)
		}
		out[i] = grant.ProtectedPath{Path: path, Name: p.Name, Dir: p.Dir}
	}
	return out, nil
}
