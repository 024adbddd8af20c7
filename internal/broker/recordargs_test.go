package broker_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/sandboxtest"
)

// TestPaddedCommandIsRecorded (red team, repro 8): a command that puts 4 KiB
// of blanks between an innocent start and what it really runs is recorded
// with what it runs: the blanks counted, and the length and SHA-256 of the
// whole arguments with the secrets redacted (never of the secret). So are
// background work and airlock exec's command.
func TestPaddedCommandIsRecorded(t *testing.T) {
	const value = "s3cr3t-in-a-padded-command-4417"
	ws := t.TempDir()
	g, err := grant.Parse([]byte(`
[paths]
read_write = ["."]
[network]
hosts = ["api.example.com"]
[secrets.TOKEN]
from = "env:AIRLOCK_TEST_TOKEN"
tools = ["http_fetch"]
hosts = ["api.example.com"]
`), "secrets.toml", ws)
	if err != nil {
		t.Fatal(err)
	}
	recDir := t.TempDir()
	s, err := broker.Open(&broker.Options{
		Grant: g, Backend: sandboxtest.Native(t), RecordsDir: recDir,
		LoadSecret: broker.LoadSecretFrom(func(k string) string {
			if k == "AIRLOCK_TEST_TOKEN" {
				return value
			}
			return ""
		}),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	pad := strings.Repeat(" ", 4100)

	shell, _ := json.Marshal(map[string]string{"command": "ls" + pad + "; echo HIDDEN-PAYLOAD > hidden.txt; : " + value})
	if res := call(t, s, "shell", string(shell)); res.Class != broker.ClassOK {
		t.Fatalf("the padded command: %s %q", res.Class, res.Output.Content)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "hidden.txt")); err != nil || string(b) != "HIDDEN-PAYLOAD\n" {
		t.Fatalf("the padded command did not run: %q, %v", b, err)
	}
	background, _ := json.Marshal(map[string]any{"command": "true" + pad + "; echo BACKGROUND-PAYLOAD", "run_in_background": true})
	if res := call(t, s, "shell", string(background)); res.Class != broker.ClassOK {
		t.Fatalf("the padded background command: %s %q", res.Class, res.Output.Content)
	}
	exec := []string{"/bin/sh", "-c", "true" + pad + "; echo EXEC-PAYLOAD"}
	if _, err := s.Exec(context.Background(), &broker.Exec{Command: exec, Env: broker.BaseEnv, Limits: g.LimitsFor("shell")}); err != nil {
		t.Fatalf("the padded exec: %v", err)
	}
	execArgs, _ := json.Marshal(map[string][]string{"command": exec})

	sum := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	redacted := []byte(strings.ReplaceAll(string(shell), value, "[redacted:TOKEN]"))
	want := map[string]struct {
		payload string
		args    []byte // as hashed
	}{
		"shell":            {"HIDDEN-PAYLOAD", redacted},
		"shell background": {"BACKGROUND-PAYLOAD", background},
		"exec":             {"EXEC-PAYLOAD", execArgs},
	}
	seen := map[string]bool{}
	for _, r := range records(t, recDir) {
		line, _ := json.Marshal(r)
		if strings.Contains(string(line), value) {
			t.Errorf("a record holds the secret's value: %s", line)
		}
		if r.Kind != audit.KindCall && r.Kind != audit.KindBackgroundStart {
			continue
		}
		name := r.Tool
		if r.Kind == audit.KindBackgroundStart || strings.Contains(string(r.Args), "run_in_background") {
			name += " background"
		}
		w, ok := want[name]
		if !ok {
			continue
		}
		seen[name] = true
		if !strings.Contains(string(r.Args), w.payload) || !strings.Contains(string(r.Args), "…[4100 blanks]…") {
			t.Errorf("%s record: args %.300s; want the blanks counted and %s", name, r.Args, w.payload)
		}
		if r.Kind == audit.KindBackgroundStart && !strings.Contains(r.Detail, w.payload) {
			t.Errorf("background-start record: detail %.300s; want %s", r.Detail, w.payload)
		}
		if r.ArgsBytes != len(w.args) || r.ArgsSHA256 != sum(w.args) {
			t.Errorf("%s record: %d bytes, sha256 %s; want %d, %s (the redacted arguments)", name, r.ArgsBytes, r.ArgsSHA256, len(w.args), sum(w.args))
		}
	}
	if len(seen) != len(want) {
		t.Errorf("records seen for %v; want %d", seen, len(want))
	}
}
