//go:build unix

package tool

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/airlockhq/airlock/wire"
)

func TestWriteFile(t *testing.T) {
	w := newWorkspace(t)
	mustSymlink(t, "../outside/secret.txt", filepath.Join(w.root, "out-link"))
	mustSymlink(t, "../outside", filepath.Join(w.root, "d"))
	mustSymlink(t, "../outside/created.txt", filepath.Join(w.root, "dangling"))
	if err := syscall.Mkfifo(filepath.Join(w.root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	tiny := w.env()
	tiny.Limits = wire.ToolLimits{FileBytes: 4}
	tests := []struct {
		name   string
		env    Env
		args   string
		want   check
		file   string // relative to root: must then hold content
		golden bool
	}{
		{name: "create", args: `{"path":"new.txt","content":"hello"}`, want: check{contains: []string{"wrote 5 bytes to " + filepath.Join(w.root, "new.txt")}}, file: "new.txt", golden: true},
		{name: "truncate_existing", args: `{"path":"hello.txt","content":"hi\n"}`, want: check{contains: []string{"wrote 3 bytes"}}, file: "hello.txt"},
		{name: "empty_content", args: `{"path":"sub/empty.txt","content":""}`, want: check{contains: []string{"wrote 0 bytes"}}, file: "sub/empty.txt"},
		{name: "absolute_inside", args: fmt.Sprintf(`{"path":%q,"content":"x"}`, filepath.Join(w.root, "abs.txt")), want: check{contains: []string{"wrote 1 bytes"}}, file: "abs.txt"},
		{name: "parent_missing", args: `{"path":"no/such/dir/x.txt","content":"x"}`, want: check{isError: true, contains: []string{`field "path": the parent directory`, "does not exist"}}},
		{name: "parent_is_file", args: `{"path":"hello.txt/x","content":"x"}`, want: check{isError: true, contains: []string{"hello.txt is a regular file, not a directory"}}},
		{name: "directory", args: `{"path":"sub","content":"x"}`, want: check{isError: true, contains: []string{"sub is a directory"}}},
		{name: "root_itself", args: `{"path":".","content":"x"}`, want: check{isError: true, contains: []string{"is a directory"}}},
		{name: "fifo", args: `{"path":"fifo","content":"x"}`, want: check{isError: true, contains: []string{"is a FIFO (named pipe)"}}},
		{name: "device", env: Env{Root: "/", Cwd: "/"}, args: `{"path":"/dev/null","content":"x"}`, want: check{isError: true, contains: []string{"/dev/null is a character device"}}},
		{name: "too_big", env: tiny, args: `{"path":"big.txt","content":"hello"}`, want: check{isError: true, contains: []string{`field "content": 5 bytes is larger than the file-size limit of 4 bytes`}}},
		{name: "traversal", args: `{"path":"../outside/new.txt","content":"x"}`, want: check{isError: true, contains: []string{"lies outside the allowed root"}}},
		{name: "double_slash", args: `{"path":"//etc/x","content":"x"}`, want: check{isError: true, contains: []string{"lies outside the allowed root"}}},
		{name: "prefix_confusion", args: fmt.Sprintf(`{"path":%q,"content":"x"}`, filepath.Join(w.evil, "new.txt")), want: check{isError: true, contains: []string{"lies outside the allowed root"}}},
		{name: "symlink_outside", args: `{"path":"out-link","content":"x"}`, want: check{isError: true, contains: []string{"leads outside the allowed root"}}},
		{name: "dangling_symlink_outside", args: `{"path":"dangling","content":"x"}`, want: check{isError: true, contains: []string{"leads outside the allowed root"}}},
		{name: "symlinked_ancestor", args: `{"path":"d/x.txt","content":"x"}`, want: check{isError: true, contains: []string{"leads outside the allowed root"}}},
		{name: "symlinked_ancestor_missing_leaf", args: `{"path":"d/new/sub/x.txt","content":"x"}`, want: check{isError: true, contains: []string{`field "path"`, "leads outside the allowed root"}}},
		{name: "missing_content", args: `{"path":"x.txt"}`, want: check{isError: true, contains: []string{`field "content": required, but missing`}}},
		{name: "wrong_type", args: `{"path":"x.txt","content":["a"]}`, want: check{isError: true, contains: []string{`field "content": expected string`}}},
		{name: "unknown_field", args: `{"path":"x.txt","content":"a","mode":"0777"}`, want: check{isError: true, contains: []string{`unknown field "mode"`}}},
		{name: "case_only_key", args: `{"path":"x.txt","Content":"a"}`, want: check{isError: true, contains: []string{`"Content"`, `use "content"`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := tt.env
			if env.Root == "" {
				env = w.env()
			}
			out := call(t, env, "write_file", tt.args)
			tt.want.verify(t, out)
			if tt.file != "" {
				var a WriteFileArgs
				mustUnmarshal(t, tt.args, &a)
				got, err := os.ReadFile(filepath.Join(w.root, tt.file))
				if err != nil || string(got) != a.Content {
					t.Errorf("%s holds %q (%v), want %q", tt.file, got, err, a.Content)
				}
			}
			if tt.golden {
				golden(t, "write_file_"+tt.name+".golden", render(out, w.base))
			}
		})
	}
	t.Run("new_file_mode", func(t *testing.T) {
		fi, err := os.Stat(filepath.Join(w.root, "new.txt"))
		if err != nil || fi.Mode().Perm()&^0o644 != 0 {
			t.Errorf("new.txt mode = %v (%v), want at most 0644", fi.Mode(), err)
		}
	})
	t.Run("outside_unchanged", func(t *testing.T) {
		ents, err := os.ReadDir(w.outside)
		if err != nil {
			t.Fatal(err)
		}
		if len(ents) != 1 || ents[0].Name() != "secret.txt" {
			var names []string
			for _, e := range ents {
				names = append(names, e.Name())
			}
			t.Errorf("outside holds %v, want only secret.txt", names)
		}
		b, _ := os.ReadFile(filepath.Join(w.outside, "secret.txt"))
		if string(b) != canary+"\n" {
			t.Errorf("the canary file changed: %q", b)
		}
	})
}

// TestWriteReplaces: write_file and edit_file replace the file whole (a new
// inode, so a reader holding the old one still sees the old content), keep
// its mode and owner, follow a symlinked leaf within the root as before
// (the link stays a link), and leave no temporary file (issue 11.1).
func TestWriteReplaces(t *testing.T) {
	w := newWorkspace(t)
	w.write(t, "real/deep/t.txt", "old\n")
	w.write(t, "real/other.txt", "other\n")
	for _, l := range [][2]string{
		{"real/deep/t.txt", "link"},
		{"link", "chain"},
		{"new.txt", "dangling"},
		{"real/deep", "dd"},
		{"../other.txt", "real/deep/up"}, // relative to real/deep, not to dd's directory
		{filepath.Join(w.root, "hello.txt"), "abs"},
		{"loop", "loop"},
	} {
		mustSymlink(t, l[0], filepath.Join(w.root, l[1]))
	}
	f := filepath.Join(w.root, "hello.txt")
	if err := os.Chmod(f, 0o640); err != nil {
		t.Fatal(err)
	}
	owner := os.Geteuid() == 0
	if owner {
		if err := os.Chown(f, 1234, 5678); err != nil {
			t.Fatal(err)
		}
	}
	held, err := os.Open(f)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()

	check{contains: []string{"wrote 4 bytes"}}.verify(t, call(t, w.env(), "write_file", `{"path":"hello.txt","content":"new\n"}`))
	check{contains: []string{"made 1 replacement"}}.verify(t, call(t, w.env(), "edit_file", `{"path":"hello.txt","old_string":"new","new_string":"newer"}`))
	if b, _ := os.ReadFile(f); string(b) != "newer\n" {
		t.Errorf("hello.txt holds %q", b)
	}
	if b, _ := io.ReadAll(held); string(b) != "line one\nline two\nline three\n" {
		t.Errorf("a reader of the old hello.txt sees %q, want the old content: the file was written in place", b)
	}
	fi, err := os.Stat(f)
	if err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("hello.txt mode = %v (%v), want 0640 kept", fi.Mode(), err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); owner && ok && (st.Uid != 1234 || st.Gid != 5678) {
		t.Errorf("hello.txt owner = %d:%d, want 1234:5678 kept", st.Uid, st.Gid)
	}

	for _, c := range []struct {
		path, file string // written through path, file (relative to root) must then hold the content
	}{
		{"link", "real/deep/t.txt"},
		{"chain", "real/deep/t.txt"},
		{"dangling", "new.txt"},
		{"dd/up", "real/other.txt"},
		{"dd/../real/other.txt", "real/other.txt"},
	} {
		content := "via " + c.path + "\n"
		out := call(t, w.env(), "write_file", fmt.Sprintf(`{"path":%q,"content":%q}`, c.path, content))
		check{contains: []string{"wrote", filepath.Join(w.root, c.path)}}.verify(t, out)
		if b, _ := os.ReadFile(filepath.Join(w.root, c.file)); string(b) != content {
			t.Errorf("write_file %s: %s holds %q, want %q", c.path, c.file, b, content)
		}
	}
	check{contains: []string{"made 1 replacement"}}.verify(t, call(t, w.env(), "edit_file", `{"path":"chain","old_string":"via","new_string":"edited via"}`))
	if b, _ := os.ReadFile(filepath.Join(w.root, "real/deep/t.txt")); string(b) != "edited via chain\n" {
		t.Errorf("edit_file chain: real/deep/t.txt holds %q", b)
	}
	for _, l := range []string{"link", "chain", "dangling", "dd", "real/deep/up"} {
		if fi, err := os.Lstat(filepath.Join(w.root, l)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s is no longer a symlink (%v, %v)", l, fi.Mode(), err)
		}
	}
	check{isError: true, contains: []string{`field "path"`, "leads outside the allowed root"}}.verify(t, call(t, w.env(), "write_file", `{"path":"abs","content":"x"}`))
	check{isError: true, contains: []string{`field "path"`, "too many levels of symlinks"}}.verify(t, call(t, w.env(), "write_file", `{"path":"loop","content":"x"}`))

	var leftovers []string
	filepath.WalkDir(w.root, func(p string, d fs.DirEntry, err error) error {
		if strings.Contains(d.Name(), ".airlock-") {
			leftovers = append(leftovers, p)
		}
		return nil
	})
	if len(leftovers) > 0 {
		t.Errorf("temporary files left: %q", leftovers)
	}
}
