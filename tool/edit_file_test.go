//go:build unix

package tool

import (
	"os"
	"path/filepath"
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
