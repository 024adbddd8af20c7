package broker_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/broker"
	"github.com/airlockhq/airlock/internal/sandboxtest"
)

// A call's arguments are abridged in its record (4 KiB a string), but a
// refusal's reason, its detail and the record's tool name echo what the
// model sent: a 1 MiB tool name, path, field name or cwd must not make a
// record of megabytes (the model's own bytes, copied two or three times
// into the records directory per call, with padding a reader cannot see
// past). Every record stays small, whatever the call carried.
func TestRefusalRecordIsBounded(t *testing.T) {
	ws := t.TempDir()
	g, err := grant.Parse([]byte("[paths]\nread_write = [\".\"]\n"), "g.toml", ws)
	if err != nil {
		t.Fatal(err)
	}
	rec := t.TempDir()
	s, err := broker.Open(&broker.Options{Grant: g, Backend: sandboxtest.Native(t), RecordsDir: rec, ID: "ses_bounds"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	big := strings.Repeat("b", 1<<20)
	blanks := strings.Repeat(" ", 1<<20)
	js := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	cases := []struct{ name, tool, args string }{
		{"tool name", "x" + blanks + "y", `{}`},
		{"path", "read_file", js(map[string]string{"path": "a" + big})},
		{"field name", "read_file", `{"path":"a","` + big + `":1}`},
		{"cwd", "shell", js(map[string]string{"command": "true", "cwd": "/nonexistent" + strings.Repeat("/a", 1<<18)})},
	}
	size := func() int64 {
		fi, err := os.Stat(filepath.Join(rec, "ses_bounds", "audit.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	const most = 64 << 10
	for _, c := range cases {
		before := size()
		res, err := s.Call(context.Background(), c.tool, json.RawMessage(c.args))
		if err != nil {
			t.Fatal(err)
		}
		if !res.Refused() {
			t.Errorf("%s: %s, want refused", c.name, res.Class)
		}
		if grew := size() - before; grew > most {
			t.Errorf("%s: the call's record is %d bytes (arguments %d bytes); want at most %d", c.name, grew, len(c.args)+len(c.tool), most)
		}
	}
}
