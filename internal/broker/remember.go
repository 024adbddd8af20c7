package broker

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/airlockhq/airlock/grant"
)

// memoryDir holds, below the records directory (which no sandbox can see),
// the protected paths each read-write tree's sessions found, one file per
// tree: the scan for nested protected paths stops after 20,000 entries, so
// a sandbox that fills its tree could otherwise push an existing nested
// repository past that bound and have it writable from the next session on.
const memoryDir = ".protected-memory"

// maxRemembered bounds what one tree's file keeps.
const maxRemembered = 20000

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
	for _, t := range trees {
		b, err := os.ReadFile(memoryFile(dir, t))
		if err != nil {
			if !os.IsNotExist(err) {
				logger.Warn("reading the protected paths earlier sessions found", "tree", t, "err", err)
			}
			continue
		}
		var list []grant.ProtectedPath
		if err := json.Unmarshal(b, &list); err != nil {
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
	for _, t := range trees {
		list := g.NestedProtected(t)
		if len(list) > maxRemembered {
			list = list[:maxRemembered]
		}
		if err := writeMemory(memoryFile(dir, t), list); err != nil {
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

// writeMemory replaces the file p with list, whole or not at all.
func writeMemory(p string, list []grant.ProtectedPath) error {
	b, err := json.Marshal(list)
	if err != nil {
		return err
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
