package capsule

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// module is the smallest valid module: the header alone.
var module = []byte("\x00asm\x01\x00\x00\x00")

func pinned(t *testing.T, manifest string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "m.wasm"), module, 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(module)
	manifest = strings.ReplaceAll(manifest, "$SUM", hex.EncodeToString(sum[:]))
	if err := os.WriteFile(filepath.Join(dir, ManifestName), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestLoad(t *testing.T) {
	dir := pinned(t, `name = "ok"
version = "1"
module = "m.wasm"
sha256 = "$SUM"
[grant]
read_only = ["."]
tools = ["read_file"]
env = ["A"]
[grant.limits]
time = "5s"
memory = "64MiB"
`)
	c, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if c.Bare() || c.Name != "ok" || c.Ask.Limits.Memory != 64<<20 || len(c.Env) != 1 {
		t.Errorf("capsule %+v, ask %+v", c, c.Ask)
	}
	bare, err := Load(filepath.Join(dir, "m.wasm"))
	if err != nil || !bare.Bare() || bare.Name != "m" {
		t.Errorf("bare module: %+v %v", bare, err)
	}
}

func TestLoadRefuses(t *testing.T) {
	for _, tc := range []struct{ manifest, want string }{
		{"name = \"x\"\nmodule = \"m.wasm\"\nsha256 = \"" + strings.Repeat("0", 64) + "\"\n", "does not match"},
		{"name = \"x\"\nmodule = \"m.wasm\"\nsha256 = \"$SUM\"\nnetwork = true\n", `unknown key "network"`},
		{"name = \"X Y\"\nmodule = \"m.wasm\"\nsha256 = \"$SUM\"\n", `name "X Y"`},
		{"name = \"x\"\nmodule = \"../m.wasm\"\nsha256 = \"$SUM\"\n", "inside the capsule's directory"},
		{"name = \"x\"\nmodule = \"m.wasm\"\nsha256 = \"short\"\n", "64 hex digits"},
		{"name = \"x\"\nmodule = \"m.wasm\"\nsha256 = \"$SUM\"\n[grant]\nenv = [\"A=B\"]\n", "want a variable name"},
		{"name = \"x\"\nmodule = \"m.wasm\"\nsha256 = \"$SUM\"\n[grant.limits]\ntime = \"soon\"\n", "not a positive duration"},
	} {
		_, err := Load(pinned(t, tc.manifest))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.manifest, err, tc.want)
		}
	}
	_, err := Load(pinned(t, "name = \"x\"\nmodule = \"m.wasm\"\nsha256 = \""+strings.Repeat("0", 64)+"\"\n"))
	if !errors.Is(err, ErrHash) {
		t.Errorf("hash mismatch: %v, want ErrHash", err)
	}
	notWasm := filepath.Join(t.TempDir(), "x.wasm")
	os.WriteFile(notWasm, []byte("#!/bin/sh"), 0o644)
	if _, err := Load(notWasm); err == nil || !strings.Contains(err.Error(), "not a WebAssembly module") {
		t.Errorf("a script: %v", err)
	}
}
