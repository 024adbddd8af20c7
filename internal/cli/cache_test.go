package cli

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/internal/wasm/wasmtest"
)

// cacheFiles lists the regular files below dir.
func cacheFiles(t *testing.T, dir string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			out[p] = true
		}
		return nil
	})
	return out
}

// TestCompiledCodeIsNeverLoadedFromDisk: machine code airlock runs natively
// must never come from a file someone else could have written. A sandbox
// that could write the old on-disk compilation cache ($AIRLOCK_CACHE_DIR,
// --cache) replaced an entry and had its code run in the broker on the next
// airlock run (red team). Here the entry of a module that exits 0 is
// replaced by the (valid, checksummed) entry of one that exits 7: the
// module must still exit 0, and nothing may be kept on disk at all.
func TestCompiledCodeIsNeverLoadedFromDisk(t *testing.T) {
	runEnv(t)
	cache := t.TempDir()
	t.Setenv("AIRLOCK_CACHE_DIR", cache)
	ws := t.TempDir()
	good, evil := filepath.Join(ws, "good.wasm"), filepath.Join(ws, "evil.wasm")
	if err := os.WriteFile(good, wasmtest.Exit(0), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(evil, wasmtest.Exit(7), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, ws, "run", "--unsandboxed", good); code != 0 {
		t.Fatalf("good: exit %d, %s", code, stderr)
	}
	before := cacheFiles(t, cache)
	if code, _, stderr := runCLI(t, ws, "run", "--unsandboxed", evil); code != 7 {
		t.Fatalf("evil: exit %d, %s", code, stderr)
	}
	var goodEntry, evilEntry string
	for p := range cacheFiles(t, cache) {
		if before[p] {
			goodEntry = p
		} else {
			evilEntry = p
		}
	}
	if goodEntry != "" && evilEntry != "" {
		// What a sandbox that can write the directory does.
		b, err := os.ReadFile(evilEntry)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(goodEntry, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if code, _, stderr := runCLI(t, ws, "run", "--unsandboxed", good); code != 0 {
		t.Errorf("good after the cache was tampered with: exit %d (7 is the planted code), %s", code, stderr)
	}
	if files := cacheFiles(t, cache); len(files) > 0 {
		t.Errorf("compiled code was kept on disk: %v", files)
	}
}

// TestRunRefusesTheCacheFlag: --cache asked for the cache that is gone;
// it is refused saying why, rather than ignored.
func TestRunRefusesTheCacheFlag(t *testing.T) {
	runEnv(t)
	ws := t.TempDir()
	mod := filepath.Join(ws, "m.wasm")
	if err := os.WriteFile(mod, wasmtest.Exit(0), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI(t, ws, "run", "--unsandboxed", "--cache", t.TempDir(), mod)
	if code != exitUsage || !strings.Contains(stderr, "compiled in memory") {
		t.Errorf("--cache: exit %d, %s", code, stderr)
	}
	if code, _, stderr := runCLI(t, ws, "run", "--unsandboxed", "--no-cache", mod); code != 0 {
		t.Errorf("--no-cache: exit %d, %s", code, stderr)
	}
}
