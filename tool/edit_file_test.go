//go:build unix

package tool

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/airlockhq/airlock/wire"
)

func TestEditFile(t *testing.T) {
	w := newWorkspace(t)
	mustSymlink(t, "../outside/secret.txt", filepath.Join(w.root, "out-link"))
	if err := syscall.Mkfifo(filepath.Join(w.root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	tiny := w.env()
	tiny.Limits = wire.ToolLimits{FileBytes: 12}
	tests := []struct {
		name    string
		env     Env
		content string // written to f.txt (mode 0750) before the call
		args    string
		want    check
		after   string // f.txt after the call
		golden  bool
	}{
		{name: "unique", content: "alpha beta gamma\n", args: `{"path":"f.txt","old_string":"beta","new_string":"BETA"}`, want: check{contains: []string{"made 1 replacement in"}}, after: "alpha BETA gamma\n", golden: true},
		{name: "replace_all", content: "a-a-a\n", args: `{"path":"f.txt","old_string":"a","new_string":"bb","replace_all":true}`, want: check{contains: []string{"made 3 replacements"}}, after: "bb-bb-bb\n", golden: true},
		{name: "shrink", content: "one two three\n", args: `{"path":"f.txt","old_string":" two three","new_string":""}`, want: check{contains: []string{"made 1 replacement"}}, after: "one\n"},
		{name: "not_unique", content: "x y x\n", args: `{"path":"f.txt","old_string":"x","new_string":"z"}`, want: check{isError: true, contains: []string{`field "old_string": found 2 times in`, "replace_all"}}, after: "x y x\n", golden: true},
		{name: "absent", content: "x y x\n", args: `{"path":"f.txt","old_string":"q","new_string":"z"}`, want: check{isError: true, contains: []string{`field "old_string": not found in`}}, after: "x y x\n"},
		{name: "empty_old", content: "x\n", args: `{"path":"f.txt","old_string":"","new_string":"z"}`, want: check{isError: true, contains: []string{`field "old_string": must not be empty`}}, after: "x\n"},
		{name: "same_strings", content: "x\n", args: `{"path":"f.txt","old_string":"x","new_string":"x"}`, want: check{isError: true, contains: []string{`field "new_string": must differ from old_string`}}, after: "x\n"},
		{name: "binary", content: "x\x00y", args: `{"path":"f.txt","old_string":"x","new_string":"z"}`, want: check{isError: true, contains: []string{"is a binary file"}}, after: "x\x00y"},
		{name: "file_too_big", env: tiny, content: "0123456789abcdef", args: `{"path":"f.txt","old_string":"0","new_string":"z"}`, want: check{isError: true, contains: []string{"larger than the file-size limit of 12 bytes"}}, after: "0123456789abcdef"},
		{name: "result_too_big", env: tiny, content: "0123456789", args: `{"path":"f.txt","old_string":"0","new_string":"zzzzz"}`, want: check{isError: true, contains: []string{`field "new_string": the edited file would be 14 bytes`}}, after: "0123456789"},
		{name: "missing_file", args: `{"path":"nope.txt","old_string":"a","new_string":"b"}`, want: check{isError: true, contains: []string{"no such file or directory"}}},
		{name: "directory", args: `{"path":"sub","old_string":"a","new_string":"b"}`, want: check{isError: true, contains: []string{"is a directory"}}},
		{name: "fifo", args: `{"path":"fifo","old_string":"a","new_string":"b"}`, want: check{isError: true, contains: []string{"is a FIFO"}}},
		{name: "traversal", args: `{"path":"../outside/secret.txt","old_string":"C","new_string":"b"}`, want: check{isError: true, contains: []string{"lies outside the allowed root"}}},
		{name: "symlink_outside", args: `{"path":"out-link","old_string":"C","new_string":"b"}`, want: check{isError: true, contains: []string{"leads outside the allowed root"}}},
		{name: "missing_new_string", args: `{"path":"f.txt","old_string":"a"}`, want: check{isError: true, contains: []string{`field "new_string": required`}}},
		{name: "wrong_type", args: `{"path":"f.txt","old_string":"a","new_string":"b","replace_all":"yes"}`, want: check{isError: true, contains: []string{`field "replace_all": expected bool`}}},
		{name: "multi", content: "one\ntwo\nthree\n", args: `{"path":"f.txt","edits":[{"old_string":"one","new_string":"1"},{"old_string":"three","new_string":"3"},{"old_string":"1\ntwo","new_string":"1\n2"}]}`,
			want: check{contains: []string{"made 3 replacements in", "-one\n-two\n-three\n+1\n+2\n+3\n"}}, after: "1\n2\n3\n", golden: true},
		{name: "multi_all_or_none", content: "one\ntwo\n", args: `{"path":"f.txt","edits":[{"old_string":"one","new_string":"1"},{"old_string":"three","new_string":"3"}]}`,
			want: check{isError: true, contains: []string{`field "edits[1].old_string": not found in`, "nothing was written"}}, after: "one\ntwo\n"},
		{name: "multi_not_unique", content: "x x\n", args: `{"path":"f.txt","edits":[{"old_string":"x","new_string":"y","replace_all":true},{"old_string":"y","new_string":"z"}]}`,
			want: check{isError: true, contains: []string{`field "edits[1].old_string": found 2 times`, "nothing was written"}}, after: "x x\n"},
		{name: "dry_run", content: "alpha beta\n", args: `{"path":"f.txt","old_string":"beta","new_string":"BETA","dry_run":true}`,
			want: check{contains: []string{"dry run: would make 1 replacement in", "nothing was written", "-alpha beta\n+alpha BETA\n"}}, after: "alpha beta\n", golden: true},
		{name: "multi_dry_run", content: "a\nb\n", args: `{"path":"f.txt","edits":[{"old_string":"a","new_string":"A"},{"old_string":"b","new_string":"B"}],"dry_run":true}`,
			want: check{contains: []string{"would make 2 replacements", "+A\n+B\n"}}, after: "a\nb\n"},
		{name: "both_forms", content: "a\n", args: `{"path":"f.txt","old_string":"a","new_string":"b","edits":[{"old_string":"a","new_string":"c"}]}`,
			want: check{isError: true, contains: []string{`field "old_string": give either edits or old_string/new_string, not both`}}, after: "a\n"},
		{name: "empty_edits", content: "a\n", args: `{"path":"f.txt","edits":[]}`, want: check{isError: true, contains: []string{`field "edits": must hold at least one edit`}}, after: "a\n"},
		{name: "edit_missing_new_string", content: "a\n", args: `{"path":"f.txt","edits":[{"old_string":"a"}]}`, want: check{isError: true, contains: []string{`field "edits[0].new_string": required, but missing`}}, after: "a\n"},
		{name: "edit_unknown_field", content: "a\n", args: `{"path":"f.txt","edits":[{"old_string":"a","new_string":"b","regex":true}]}`, want: check{isError: true, contains: []string{`unknown field "edits[0].regex"`}}, after: "a\n"},
		{name: "edit_same_strings", content: "a\n", args: `{"path":"f.txt","edits":[{"old_string":"a","new_string":"b"},{"old_string":"b","new_string":"b"}]}`, want: check{isError: true, contains: []string{`field "edits[1].new_string": must differ from old_string`}}, after: "a\n"},
		{name: "no_edit", content: "a\n", args: `{"path":"f.txt"}`, want: check{isError: true, contains: []string{`field "old_string": required, but missing (or give edits)`}}, after: "a\n"},
		{name: "case_only_key", args: `{"path":"f.txt","old_string":"a","New_String":"b"}`, want: check{isError: true, contains: []string{`use "new_string"`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := tt.env
			if env.Root == "" {
				env = w.env()
			}
			f := filepath.Join(w.root, "f.txt")
			if tt.content != "" {
				w.write(t, "f.txt", tt.content)
				if err := os.Chmod(f, 0o750); err != nil {
					t.Fatal(err)
				}
			}
			out := call(t, env, "edit_file", tt.args)
			tt.want.verify(t, out)
			if tt.content != "" {
				got, err := os.ReadFile(f)
				if err != nil || string(got) != tt.after {
					t.Errorf("f.txt holds %q (%v), want %q", got, err, tt.after)
				}
				if fi, err := os.Stat(f); err != nil || fi.Mode().Perm() != 0o750 {
					t.Errorf("f.txt mode = %v (%v), want 0750 kept", fi.Mode(), err)
				}
			}
			if tt.golden {
				golden(t, "edit_file_"+tt.name+".golden", render(out, w.base))
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(w.outside, "secret.txt")); string(b) != canary+"\n" {
		t.Errorf("the canary file changed: %q", b)
	}
}

// TestEditFileAccess: a dry run only reads the file; an edit writes it.
func TestEditFileAccess(t *testing.T) {
	d, _ := Lookup("edit_file")
	for _, tt := range []struct {
		args  string
		write bool
	}{
		{`{"path":"f.txt","old_string":"a","new_string":"b"}`, true},
		{`{"path":"f.txt","edits":[{"old_string":"a","new_string":"b"}]}`, true},
		{`{"path":"f.txt","old_string":"a","new_string":"b","dry_run":true}`, false},
	} {
		a, err := d.Parse(json.RawMessage(tt.args))
		if err != nil {
			t.Fatal(err)
		}
		acc := a.Access()
		if len(acc.Paths) != 1 || acc.Paths[0].Path != "f.txt" || acc.Paths[0].Write != tt.write {
			t.Errorf("Access(%s) = %+v, want f.txt write=%v", tt.args, acc, tt.write)
		}
	}
}

// TestEditFileDiffIsCapped: a large change returns a diff cut at 32 KiB.
func TestEditFileDiffIsCapped(t *testing.T) {
	w := newWorkspace(t)
	w.write(t, "big.txt", strings.Repeat("line of text\n", 10000))
	out := call(t, w.env(), "edit_file", `{"path":"big.txt","old_string":"line","new_string":"LINE","replace_all":true}`)
	if out.IsError || len(out.Content) > maxDiffBytes+200 || !strings.Contains(out.Content, "[diff cut: ") {
		t.Errorf("large edit: %d bytes, error %v, ends %q", len(out.Content), out.IsError, out.Content[max(0, len(out.Content)-80):])
	}
}
