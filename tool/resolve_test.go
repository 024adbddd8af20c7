//go:build unix

package tool

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPathEncoding: a path that is not text is refused, naming the field,
// before it can be looked up as a name holding U+FFFD (issue 19.7). A file
// with that name exists, so a lookup would succeed.
func TestPathEncoding(t *testing.T) {
	w := newWorkspace(t)
	w.write(t, "f\ufffd\ufffd", "replacement-named\n")
	w.write(t, "f\ufffd", "replacement-named\n")
	for _, c := range []struct{ tool, args, field string }{
		{"read_file", "{\"path\":\"f\xff\xfe\"}", "path"},
		{"read_file", `{"path":"f\ud800"}`, "path"},
		{"read_file", `{"path":"f\udc00"}`, "path"},
		{"write_file", "{\"path\":\"f\xff\xfe\",\"content\":\"x\"}", "path"},
		{"write_file", `{"path":"new.txt","content":"a\ud800b"}`, "content"},
		{"edit_file", `{"path":"f\ud800","old_string":"r","new_string":"R"}`, "path"},
		{"edit_file", "{\"path\":\"hello.txt\",\"old_string\":\"one\",\"new_string\":\"\xff\"}", "new_string"},
		{"glob", "{\"pattern\":\"f\xff*\"}", "pattern"},
		{"glob", `{"pattern":"*","path":"\udfff"}`, "path"},
		{"grep", `{"pattern":"r","path":"f\ud800"}`, "path"},
		{"grep", "{\"pattern\":\"\xfe\"}", "pattern"},
		{"shell", `{"command":"true","cwd":"\ud800"}`, "cwd"},
	} {
		out := call(t, w.env(), c.tool, c.args)
		want := `field "` + c.field + `": `
		if !out.IsError || !strings.Contains(out.Content, want) || !strings.Contains(out.Content, "UTF-8") {
			t.Errorf("%s %q: got %q, want a refusal containing %q and UTF-8", c.tool, c.args, out.Content, want)
		}
	}
	if _, err := os.Stat(filepath.Join(w.root, "new.txt")); err == nil {
		t.Error("write_file created new.txt from content with a lone surrogate")
	}
	// Run called without Parse (a Go caller building the struct) refuses too.
	out := writeFile.Run(t.Context(), w.env(), WriteFileArgs{Path: "f\xff\xfe", Content: "x"})
	if !out.IsError || !strings.Contains(out.Content, `field "path"`) || !strings.Contains(out.Content, "not valid UTF-8") {
		t.Errorf("Run with an invalid path = %q, want a refusal", out.Content)
	}
	for _, name := range []string{"f\ufffd\ufffd", "f\ufffd"} {
		if b, _ := os.ReadFile(filepath.Join(w.root, name)); string(b) != "replacement-named\n" {
			t.Errorf("%q changed: %q", name, b)
		}
	}
}

// TestPathDirSuffix: a name followed by "/", "/." or "/.." must be a
// directory, as the kernel has it (issue 19.7); lexical cleaning alone would
// read f.txt for "f.txt/.".
func TestPathDirSuffix(t *testing.T) {
	w := newWorkspace(t)
	w.write(t, "f.txt", "the file\n")
	mustSymlink(t, "f.txt", filepath.Join(w.root, "flink"))
	mustSymlink(t, "sub", filepath.Join(w.root, "dlink"))
	notDir := check{isError: true, contains: []string{`field "path": not a directory: ` + filepath.Join(w.root, "f.txt") + " is a regular file"}}
	tests := []struct {
		name, tool, args string
		want             check
	}{
		{"read_dot", "read_file", `{"path":"f.txt/."}`, notDir},
		{"read_slash", "read_file", `{"path":"f.txt/"}`, notDir},
		{"read_slashes", "read_file", `{"path":"f.txt//"}`, notDir},
		{"read_dotdot", "read_file", `{"path":"f.txt/.."}`, notDir},
		{"read_through_file", "read_file", `{"path":"f.txt/../hello.txt"}`, notDir},
		{"read_deeper_through_file", "read_file", `{"path":"f.txt/x/../../hello.txt"}`, check{isError: true, contains: []string{`field "path": a component of`, "is not a directory"}}},
		{"read_absolute", "read_file", `{"path":"` + filepath.Join(w.root, "f.txt") + `/."}`, notDir},
		{"read_symlink_to_file", "read_file", `{"path":"flink/"}`, check{isError: true, contains: []string{"not a directory: " + filepath.Join(w.root, "flink") + " is a regular file"}}},
		{"read_missing_through", "read_file", `{"path":"nope/../hello.txt"}`, check{isError: true, contains: []string{"no such file or directory"}}},
		{"read_dir_slash", "read_file", `{"path":"sub/"}`, check{isError: true, contains: []string{"sub is a directory"}}},
		{"read_missing_slash", "read_file", `{"path":"nope/"}`, check{isError: true, contains: []string{"no such file or directory"}}},
		{"read_through_dir", "read_file", `{"path":"sub/../hello.txt"}`, check{contains: []string{"line one"}}},
		{"read_through_dir_symlink", "read_file", `{"path":"dlink/./a.go"}`, check{contains: []string{"package sub"}}},
		{"read_plain_dot", "read_file", `{"path":"./hello.txt"}`, check{contains: []string{"line one"}}},
		{"write_dot", "write_file", `{"path":"f.txt/.","content":"x"}`, notDir},
		{"write_slash", "write_file", `{"path":"f.txt/","content":"x"}`, notDir},
		{"write_new_slash", "write_file", `{"path":"new/","content":"x"}`, check{isError: true, contains: []string{`field "path": the path ends in a slash`, "names a directory"}}},
		{"write_new_dot", "write_file", `{"path":"new/.","content":"x"}`, check{isError: true, contains: []string{"names a directory"}}},
		{"edit_dot", "edit_file", `{"path":"f.txt/.","old_string":"the","new_string":"THE"}`, notDir},
		{"edit_dotdot", "edit_file", `{"path":"f.txt/..","old_string":"the","new_string":"THE"}`, notDir},
		{"grep_dot", "grep", `{"pattern":"the","path":"f.txt/."}`, notDir},
		{"grep_dir_slash", "grep", `{"pattern":"package","path":"sub/"}`, check{contains: []string{"a.go"}}},
		{"glob_dot", "glob", `{"pattern":"*","path":"f.txt/."}`, notDir},
		{"glob_pattern_through_file", "glob", `{"pattern":"f.txt/../*.txt"}`, check{isError: true, contains: []string{"not a directory: " + filepath.Join(w.root, "f.txt")}}},
		{"shell_cwd_slash", "shell", `{"command":"pwd","cwd":"f.txt/"}`, check{isError: true, contains: []string{`field "cwd": not a directory`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := call(t, w.env(), tt.tool, tt.args)
			tt.want.verify(t, out)
		})
	}
	if b, _ := os.ReadFile(filepath.Join(w.root, "f.txt")); string(b) != "the file\n" {
		t.Errorf("f.txt changed: %q", b)
	}
	for _, name := range []string{"new"} {
		if _, err := os.Lstat(filepath.Join(w.root, name)); err == nil {
			t.Errorf("%s was created", name)
		}
	}
}
