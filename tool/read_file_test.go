//go:build unix

package tool

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/airlockhq/airlock/internal/testenv"
	"github.com/airlockhq/airlock/wire"
)

func TestReadFile(t *testing.T) {
	w := newWorkspace(t)
	w.write(t, "empty.txt", "")
	w.write(t, "bin.dat", "abc\x00def")
	w.write(t, "latin1.txt", "caf\xe9\n")
	w.write(t, "many.txt", strings.Repeat("0123456789\n", 10))
	mustSymlink(t, "../outside/secret.txt", filepath.Join(w.root, "out-link"))
	mustSymlink(t, "../outside", filepath.Join(w.root, "out-dir"))
	mustSymlink(t, "hello.txt", filepath.Join(w.root, "in-link"))
	if err := syscall.Mkfifo(filepath.Join(w.root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", filepath.Join(w.root, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()

	small := w.env()
	small.Limits = wire.ToolLimits{OutputBytes: 35}
	tests := []struct {
		name   string
		env    Env
		args   string
		want   check
		golden bool
	}{
		{name: "whole", args: `{"path":"hello.txt"}`, want: check{contains: []string{"line one\nline two\nline three\n"}}, golden: true},
		{name: "offset_limit", args: `{"path":"hello.txt","offset":2,"limit":1}`, want: check{contains: []string{"line two\n"}}, golden: true},
		{name: "absolute", args: fmt.Sprintf(`{"path":%q}`, filepath.Join(w.root, "sub/a.go")), want: check{contains: []string{"package sub"}}},
		{name: "dot_segments_inside", args: `{"path":"sub/../hello.txt"}`, want: check{contains: []string{"line one"}}},
		{name: "symlink_inside", args: `{"path":"in-link"}`, want: check{contains: []string{"line one"}}},
		{name: "empty", args: `{"path":"empty.txt"}`, want: check{contains: []string{"is empty"}}, golden: true},
		{name: "truncated", env: small, args: `{"path":"many.txt"}`, want: check{contains: []string{"[truncated: 77 more bytes; read further with offset/limit]"}}, golden: true},
		{name: "offset_past_end", args: `{"path":"hello.txt","offset":9}`, want: check{isError: true, contains: []string{`field "offset": 9 is past the end`, "3 lines"}}},
		{name: "negative_offset", args: `{"path":"hello.txt","offset":-3}`, want: check{isError: true, contains: []string{`field "offset": must be >= 1, got -3`}}},
		{name: "negative_limit", args: `{"path":"hello.txt","limit":-1}`, want: check{isError: true, contains: []string{`field "limit": must be >= 1, got -1`}}},
		{name: "traversal", args: `{"path":"../../etc/passwd"}`, want: check{isError: true, contains: []string{`field "path": "../../etc/passwd" lies outside the allowed root`}}},
		{name: "traversal_to_canary", args: `{"path":"../outside/secret.txt"}`, want: check{isError: true, contains: []string{"lies outside the allowed root"}}},
		{name: "dot_then_traversal", args: `{"path":"./../x"}`, want: check{isError: true, contains: []string{"lies outside the allowed root"}}},
		{name: "double_slash", args: `{"path":"//etc/shadow"}`, want: check{isError: true, contains: []string{`"//etc/shadow" lies outside the allowed root`}}},
		{name: "absolute_outside", args: `{"path":"/etc/passwd"}`, want: check{isError: true, contains: []string{"lies outside the allowed root"}}},
		{name: "prefix_confusion", args: fmt.Sprintf(`{"path":%q}`, filepath.Join(w.evil, "secret.txt")), want: check{isError: true, contains: []string{"lies outside the allowed root"}}},
		{name: "symlink_outside", args: `{"path":"out-link"}`, want: check{isError: true, contains: []string{`field "path":`, "leads outside the allowed root"}}},
		{name: "symlinked_dir_outside", args: `{"path":"out-dir/secret.txt"}`, want: check{isError: true, contains: []string{"leads outside the allowed root"}}},
		{name: "fifo", args: `{"path":"fifo"}`, want: check{isError: true, contains: []string{"is a FIFO (named pipe), not a regular file"}}},
		{name: "socket", args: `{"path":"sock"}`, want: check{isError: true, contains: []string{`field "path"`, "sock is a socket, not a regular file"}}},
		{name: "proc_file_reports_size_0", env: Env{Root: "/", Cwd: "/"}, args: `{"path":"/proc/self/status","limit":1}`, want: check{contains: []string{"Name:"}}},
		{name: "device", env: Env{Root: "/", Cwd: "/"}, args: `{"path":"/dev/null"}`, want: check{isError: true, contains: []string{"/dev/null is a character device"}}},
		{name: "directory", args: `{"path":"sub"}`, want: check{isError: true, contains: []string{"is a directory"}}},
		{name: "binary_nul", args: `{"path":"bin.dat"}`, want: check{isError: true, contains: []string{"is a binary file (7 bytes"}}},
		{name: "binary_utf8", args: `{"path":"latin1.txt"}`, want: check{isError: true, contains: []string{"is a binary file (5 bytes; not valid UTF-8)"}}},
		{name: "missing", args: `{"path":"nope.txt"}`, want: check{isError: true, contains: []string{`field "path": no such file or directory:`}}},
		{name: "unknown_field", args: `{"path":"hello.txt","bogus":1}`, want: check{isError: true, contains: []string{`unknown field "bogus"`}}},
		{name: "wrong_type", args: `{"path":7}`, want: check{isError: true, contains: []string{`field "path": expected string, got JSON number`}}},
		{name: "case_only_key", args: `{"Path":"hello.txt"}`, want: check{isError: true, contains: []string{`"Path"`, `use "path"`}}},
		{name: "duplicate_key", args: `{"path":"hello.txt","path":"x"}`, want: check{isError: true, contains: []string{`duplicate key "path"`}}},
		{name: "empty_path", args: `{"path":""}`, want: check{isError: true, contains: []string{`field "path": required, but missing or empty`}}},
		{name: "paths", args: `{"paths":["hello.txt","missing.txt","sub/a.go"]}`, want: check{contains: []string{"==> hello.txt <==\nline one\nline two\nline three\n\n==> missing.txt <==\n", "no such file", "==> sub/a.go <==\npackage sub"}}, golden: true},
		{name: "paths_all_fail", args: `{"paths":["missing.txt","bin.dat"]}`, want: check{isError: true, contains: []string{"==> missing.txt <==", "==> bin.dat <==", "binary file"}}},
		{name: "paths_field_named", args: `{"paths":["hello.txt","../../etc/passwd"]}`, want: check{contains: []string{`field "paths[1]": "../../etc/passwd" lies outside the allowed root`, "line one"}}},
		{name: "paths_share_the_cap", env: small, args: `{"paths":["many.txt","hello.txt"]}`, want: check{contains: []string{"==> many.txt <==", "[truncated: ", "==> hello.txt <==\nline one"}}},
		{name: "path_and_paths", args: `{"path":"hello.txt","paths":["hello.txt"]}`, want: check{isError: true, contains: []string{`field "paths": give either path or paths, not both`}}},
		{name: "empty_paths", args: `{"paths":[]}`, want: check{isError: true, contains: []string{`field "paths": must name at least one path`}}},
		{name: "empty_path_in_paths", args: `{"paths":["hello.txt",""]}`, want: check{isError: true, contains: []string{`field "paths[1]"`}}},
		{name: "tail", args: `{"path":"hello.txt","tail":2}`, want: check{exact: "line two\nline three\n"}, golden: true},
		{name: "tail_more_than_the_file", args: `{"path":"hello.txt","tail":50}`, want: check{exact: "line one\nline two\nline three\n"}},
		{name: "tail_cut_to_the_cap", env: small, args: `{"path":"many.txt","tail":5}`, want: check{contains: []string{"[truncated: the 22 bytes before this were cut", "0123456789\n0123456789\n0123456789\n"}}},
		{name: "tail_with_offset", args: `{"path":"hello.txt","tail":2,"offset":1}`, want: check{isError: true, contains: []string{`field "tail": tail counts from the end, offset from the start`}}},
		{name: "tail_with_limit", args: `{"path":"hello.txt","tail":2,"limit":1}`, want: check{isError: true, contains: []string{`field "tail": tail already says how many lines`}}},
		{name: "tail_binary", args: `{"path":"bin.dat","tail":1}`, want: check{isError: true, contains: []string{"binary file"}}},
		{name: "missing_path", args: `{}`, want: check{isError: true, contains: []string{`field "path": required, but missing`}}},
		{name: "nul_in_path", args: `{"path":"a\u0000b"}`, want: check{isError: true, contains: []string{`field "path": must not contain a NUL byte`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if strings.HasPrefix(tt.name, "proc_") && runtime.GOOS != "linux" {
				t.Skip("no /proc on " + runtime.GOOS)
			}
			env := tt.env
			if env.Root == "" {
				env = w.env()
			}
			out := call(t, env, "read_file", tt.args)
			tt.want.verify(t, out)
			if tt.golden {
				golden(t, "read_file_"+tt.name+".golden", render(out, w.base))
			}
		})
	}
}

// TestReadFileHugeFileCostsTheCap reads a sparse 4 GiB file: the tool must
// allocate about the cap, not the file.
func TestReadFileHugeFileCostsTheCap(t *testing.T) {
	w := newWorkspace(t)
	p := w.write(t, "huge.txt", strings.Repeat("text line\n", 1000))
	if err := os.Truncate(p, 4<<30); err != nil {
		testenv.RequireFeature(t, fmt.Sprintf("cannot make a sparse 4 GiB file here: %v", err))
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	out := call(t, w.env(), "read_file", `{"path":"huge.txt"}`)
	runtime.ReadMemStats(&after)
	if out.IsError || !out.Truncated {
		t.Fatalf("want a truncated read, got IsError=%v Truncated=%v: %.200q", out.IsError, out.Truncated, out.Content)
	}
	if want := int64(4<<30) - defaultOutputBytes; out.Meta.OmittedBytes != want {
		t.Errorf("OmittedBytes = %d, want %d", out.Meta.OmittedBytes, want)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 8*defaultOutputBytes {
		t.Errorf("reading allocated %d bytes, want O(cap) (<= %d)", got, 8*defaultOutputBytes)
	}
}

// TestReadFileAccessListsEveryPath: the grant check sees every path.
func TestReadFileAccessListsEveryPath(t *testing.T) {
	d, _ := Lookup("read_file")
	a, err := d.Parse([]byte(`{"paths":["a","/etc/passwd","b/c"]}`))
	if err != nil {
		t.Fatal(err)
	}
	got := a.Access().Paths
	want := []PathAccess{{Path: "a"}, {Path: "/etc/passwd"}, {Path: "b/c"}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Access = %v, want %v", got, want)
	}
}

// TestReadBufSize checks the read buffer's size: the whole of a small file
// and no less than the sniff, at most maxReadBuf, and the most for a file
// that reports no size (/proc).
func TestReadBufSize(t *testing.T) {
	for _, c := range []struct {
		size int64
		want int
	}{
		{0, maxReadBuf},
		{-1, maxReadBuf},
		{1, sniffBytes},
		{4096, sniffBytes},
		{sniffBytes, sniffBytes + 1},
		{20000, 20001},
		{maxReadBuf - 1, maxReadBuf},
		{maxReadBuf, maxReadBuf},
		{1 << 30, maxReadBuf},
	} {
		if got := readBufSize(c.size); got != c.want {
			t.Errorf("readBufSize(%d) = %d, want %d", c.size, got, c.want)
		}
	}
}

// TestReadFileLinesLongerThanItsBuffer reads a small file whose buffer is
// sized to it and a large one with a line longer than the largest buffer:
// both come back whole.
func TestReadFileLinesLongerThanItsBuffer(t *testing.T) {
	dir := t.TempDir()
	long := strings.Repeat("x", maxReadBuf+100) + "\nend\n"
	small := "one\ntwo\n"
	for name, body := range map[string]string{"long.txt": long, "small.txt": small} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		out := runReadFile(t.Context(), Env{Root: dir, Cwd: dir}, ReadFileArgs{Path: name})
		if out.IsError || out.Content != body {
			t.Errorf("%s: got %d bytes (error %v), want the file's %d", name, len(out.Content), out.IsError, len(body))
		}
	}
}

// TestOutputGrow: the room given to read_file's output never counts below
// nothing when more was skipped than fstat's size said the file held (it
// grew meanwhile, or it is a /proc file that reports a size of 0): a
// negative count made bytes.Buffer.Grow panic.
func TestOutputGrow(t *testing.T) {
	for _, c := range []struct {
		size, skipped int64
		cp, buf, want int
	}{
		{4096, 0, 1 << 20, 8192, 4096 + 8192},
		{4096, 4000, 1 << 20, 8192, 96 + 8192},
		{10 << 20, 0, 1 << 20, 8192, 1<<20 + 8192},
		{4096, 4096, 1 << 20, 8192, 8192},
		{4096, 100 << 10, 1 << 20, 8192, 8192},
		{0, 1 << 30, 1 << 20, maxReadBuf, maxReadBuf},
	} {
		if got := outputGrow(c.size, c.skipped, c.cp, c.buf); got != c.want {
			t.Errorf("outputGrow(%d, %d, %d, %d) = %d, want %d", c.size, c.skipped, c.cp, c.buf, got, c.want)
		}
	}
}
