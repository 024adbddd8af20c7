package tool

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/airlockhq/airlock/grant"
	"github.com/google/go-cmp/cmp"
)

func TestRegistryOrder(t *testing.T) {
	want := []string{"read_file", "write_file", "edit_file", "glob", "grep", "shell", "background_command", "http_fetch", "web_search"}
	if d := cmp.Diff(want, Names()); d != "" {
		t.Errorf("Names() (-want +got):\n%s", d)
	}
	for _, d := range All() {
		got, ok := Lookup(d.Name)
		if !ok || got.Name != d.Name || !bytes.Equal(got.Schema, d.Schema) {
			t.Errorf("Lookup(%q) = %v, %v", d.Name, got, ok)
		}
		if d.Description == "" || !bytes.Contains([]byte(d.Description), []byte("Limits")) {
			t.Errorf("%s: the description must state the tool's limits", d.Name)
		}
	}
	for _, d := range All() {
		if d.Broker != (d.Name == "background_command") {
			t.Errorf("%s: Broker = %v; only background_command is answered by the broker", d.Name, d.Broker)
		}
	}
}

// TestNamesAreTheGrants ties the registry to the grant's list of tool
// names (grant.ToolNames, which the grant cannot take from here: it imports
// no tool code), and the hints table to the registry: a tool added to one
// and not the others fails here.
func TestNamesAreTheGrants(t *testing.T) {
	if d := cmp.Diff(grant.ToolNames(), Names()); d != "" {
		t.Errorf("tool.Names() differs from grant.ToolNames() (-grant +tool):\n%s", d)
	}
	for name := range hints {
		if _, ok := Lookup(name); !ok {
			t.Errorf("hints has %q, which is not a tool", name)
		}
	}
}

// TestHints pins every tool's hints, the MCP tool annotations clients use
// to decide what to confirm: the file readers change nothing and stay on the
// granted files; writers may overwrite; shell may do anything the grant
// allows, hosts included; http_fetch only reads, but from the network.
func TestHints(t *testing.T) {
	type h struct{ readOnly, destructive, idempotent, openWorld bool }
	want := map[string]h{
		"read_file":          {readOnly: true, idempotent: true},
		"glob":               {readOnly: true, idempotent: true},
		"grep":               {readOnly: true, idempotent: true},
		"write_file":         {destructive: true, idempotent: true},
		"edit_file":          {destructive: true},
		"shell":              {destructive: true, openWorld: true},
		"background_command": {destructive: true, idempotent: true},
		"http_fetch":         {readOnly: true, idempotent: true, openWorld: true},
		"web_search":         {readOnly: true, idempotent: true, openWorld: true},
	}
	if len(want) != len(All()) {
		t.Errorf("the test names %d tools, the registry has %d", len(want), len(All()))
	}
	for _, d := range All() {
		got := h{d.Hints.ReadOnly, d.Hints.Destructive, d.Hints.Idempotent, d.Hints.OpenWorld}
		if w, ok := want[d.Name]; !ok || got != w {
			t.Errorf("%s: hints %+v, want %+v", d.Name, got, w)
		}
		if d.Hints.Title == "" {
			t.Errorf("%s: no title", d.Name)
		}
		if d.Hints.ReadOnly && d.Hints.Destructive {
			t.Errorf("%s: read-only and destructive at once", d.Name)
		}
	}
}

// TestSchemas pins each tool's JSON schema and description in a golden file.
func TestSchemas(t *testing.T) {
	for _, d := range All() {
		t.Run(d.Name, func(t *testing.T) {
			var schema any
			if err := json.Unmarshal(d.Schema, &schema); err != nil {
				t.Fatalf("schema is not JSON: %v", err)
			}
			b, err := json.MarshalIndent(map[string]any{
				"name":        d.Name,
				"description": d.Description,
				"idempotent":  d.Hints.Idempotent,
				"schema":      schema,
			}, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden(t, "schema_"+d.Name+".json", string(b)+"\n")
		})
	}
}

func TestAccess(t *testing.T) {
	tests := []struct {
		tool string
		args string
		want Access
	}{
		{"read_file", `{"path":"a/b.txt"}`, Access{Paths: []PathAccess{{Path: "a/b.txt"}}}},
		{"write_file", `{"path":"/w/x","content":""}`, Access{Paths: []PathAccess{{Path: "/w/x", Write: true}}}},
		{"edit_file", `{"path":"x","old_string":"a","new_string":"b"}`, Access{Paths: []PathAccess{{Path: "x", Write: true}}}},
		{"glob", `{"pattern":"**/*.go"}`, Access{Paths: []PathAccess{{Path: "."}}}},
		{"glob", `{"pattern":"src/lib/*.go","path":"/w"}`, Access{Paths: []PathAccess{{Path: "/w/src/lib"}}}},
		{"glob", `{"pattern":"/etc/*.conf","path":"/w"}`, Access{Paths: []PathAccess{{Path: "/etc"}}}},
		{"grep", `{"pattern":"x"}`, Access{Paths: []PathAccess{{Path: "."}}}},
		{"grep", `{"pattern":"x","path":"/src"}`, Access{Paths: []PathAccess{{Path: "/src"}}}},
		{"shell", `{"command":"ls"}`, Access{Paths: []PathAccess{{Path: "."}}, Exec: true}},
		{"shell", `{"command":"ls","cwd":"/w/sub"}`, Access{Paths: []PathAccess{{Path: "/w/sub"}}, Exec: true}},
		{"background_command", `{"operation":"status","work_id":"wrk_0123456789abcdef"}`, Access{}},
		{"http_fetch", `{"url":"https://API.example.com./x#frag"}`, Access{Hosts: []string{"api.example.com:443"}}},
		{"http_fetch", `{"url":"http://a.test:8080/","method":"HEAD"}`, Access{Hosts: []string{"a.test:8080"}}},
		{"http_fetch", `{"url":"https://[2001:db8::1]/"}`, Access{Hosts: []string{"[2001:db8::1]:443"}}},
	}
	for _, tt := range tests {
		t.Run(tt.tool+tt.args, func(t *testing.T) {
			d, _ := Lookup(tt.tool)
			a, err := d.Parse(json.RawMessage(tt.args))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, a.Access()); diff != "" {
				t.Errorf("Access (-want +got):\n%s", diff)
			}
		})
	}
}

// schemaAtInit is read while the package initialises, before any test.
var schemaAtInit = func() int {
	n := 0
	for _, d := range all {
		n += len(d.Schema)
	}
	return n
}()

// No schema is built while the package initialises: every start of the
// binary (the sandbox init's, the runner's) would pay for the reflection.
// The first All or Lookup builds them.
func TestSchemasBuiltOnFirstUse(t *testing.T) {
	if schemaAtInit != 0 {
		t.Fatalf("%d bytes of schema built at package initialisation, want none", schemaAtInit)
	}
	d, ok := Lookup("read_file")
	if !ok || !json.Valid(d.Schema) || len(d.Schema) == 0 {
		t.Fatalf("Lookup: schema %q", d.Schema)
	}
	for _, d := range All() {
		if !json.Valid(d.Schema) || len(d.Schema) == 0 {
			t.Errorf("All: %s has schema %q", d.Name, d.Schema)
		}
	}
}

// TestFindBuildsNoSchema checks that Find, which the runner in every
// sandbox uses, returns the tool Lookup does without building its schema
// (checked in a fresh process, where no Lookup ran before), and that the
// Def it returns parses calls.
func TestFindBuildsNoSchema(t *testing.T) {
	if os.Getenv("AIRLOCK_TOOL_FIND_CHILD") == "1" {
		for _, n := range Names() {
			d, ok := Find(n)
			if !ok || d.Name != n {
				fmt.Printf("Find(%q) = %v, %v\n", n, d, ok)
				os.Exit(1)
			}
			if d.Schema != nil {
				fmt.Printf("Find(%q) built the schema\n", n)
				os.Exit(1)
			}
		}
		if d, _ := Find("read_file"); d == nil {
			os.Exit(1)
		} else if _, err := d.Parse(json.RawMessage(`{"path":"a"}`)); err != nil {
			fmt.Printf("parse: %v\n", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if _, ok := Find("no_such_tool"); ok {
		t.Error("Find found no_such_tool")
	}
	for _, n := range Names() {
		f, _ := Find(n)
		l, _ := Lookup(n)
		if f.Name != l.Name || f.Description != l.Description || f.Hints != l.Hints || f.Broker != l.Broker {
			t.Errorf("Find(%q) and Lookup differ", n)
		}
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestFindBuildsNoSchema$", "-test.count=1")
	cmd.Env = append(os.Environ(), "AIRLOCK_TOOL_FIND_CHILD=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
}
