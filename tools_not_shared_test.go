package airlock_test

import (
	"bytes"
	"testing"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/tool"
)

// TestToolsAreCopies: what the Go API hands out about its tools is the
// caller's to change. airlock.Tools' schemas and tool.All's and
// tool.Lookup's Defs were airlock's own, so a program that adjusted a
// schema in place or a hint for its client (shell marked idempotent and
// read-only, say) changed the tools of every session in the process: the
// remote backend retries exactly the calls whose Def says so, and a shell
// call lost with its hands would have run twice.
func TestToolsAreCopies(t *testing.T) {
	want := airlock.Tools()
	for _, tl := range airlock.Tools() {
		for i := range tl.Schema {
			tl.Schema[i] = 'X'
		}
	}
	for i, tl := range airlock.Tools() {
		if !bytes.Equal(tl.Schema, want[i].Schema) || bytes.Contains(tl.Schema, []byte("XXXX")) {
			t.Fatalf("%s: changing a schema airlock.Tools returned changed the tool's schema: %.40s", tl.Name, tl.Schema)
		}
	}

	before := map[string]tool.Hints{}
	for _, d := range tool.All() {
		before[d.Name] = d.Hints
	}
	sh, ok := tool.Lookup("shell")
	if !ok {
		t.Fatal("no shell tool")
	}
	sh.Hints.ReadOnly, sh.Hints.Idempotent, sh.Broker = true, true, true
	sh.Name = "read_file"
	for _, d := range tool.All() {
		d.Description = "changed"
		d.Hints.Idempotent = true
	}
	if f, _ := tool.Find("write_file"); f != nil {
		f.Hints.Idempotent, f.Hints.Destructive = true, false
	}
	for _, name := range []string{"shell", "write_file", "edit_file"} {
		for _, get := range []func(string) (*tool.Def, bool){tool.Lookup, tool.Find} {
			d, ok := get(name)
			if !ok {
				t.Fatalf("%s is gone", name)
			}
			if d.Name != name || d.Hints != before[name] || d.Broker || d.Description == "changed" {
				t.Errorf("%s: a change to a Def the tool package returned stuck: %+v", name, d.Hints)
			}
		}
	}
}
