package wasm

import (
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/airlockhq/airlock/grant"
	"github.com/google/go-cmp/cmp"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
)

// testGrant is a grant parsed from text, with relative paths from base
// (resolved, as grants are).
func testGrant(t testing.TB, base, text string) *grant.Grant {
	t.Helper()
	g, err := grant.Parse([]byte(text), "grant.toml", base)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// tempDir is t.TempDir with its symlinks resolved, as a grant's paths are.
func tempDir(t testing.TB) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// snapshot records every entry below dir: its kind, mode, size, modification
// time and, for files and links, its content or target.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		v := fi.Mode().String() + " " + fi.ModTime().String()
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			v += " -> " + l
		case fi.Mode().IsRegular():
			b, _ := os.ReadFile(p)
			v += " " + string(b)
		}
		out[p] = v
		return nil
	})
	return out
}

// The methods of the file system interfaces wazero calls, each listed by
// whether it can change anything. A method wazero adds fails
// TestReadOnlyRootRefusesEveryChange until it is looked at here.
var (
	fsChanges   = []string{"Chmod", "Link", "Mkdir", "OpenFile", "Rename", "Rmdir", "Symlink", "Unlink", "Utimens"}
	fsReads     = []string{"Lstat", "Readlink", "Stat"}
	fileChanges = []string{"Pwrite", "SetAppend", "Truncate", "Utimens", "Write"}
	fileReads   = []string{"Close", "Datasync", "Dev", "Ino", "IsAppend", "IsDir", "Pread", "Read", "Readdir", "Seek", "Stat", "Sync"}
)

func methods(t reflect.Type) []string {
	var out []string
	for i := range t.NumMethod() {
		out = append(out, t.Method(i).Name)
	}
	return out
}

// TestReadOnlyRootRefusesEveryChange calls every method of the file system
// a read-only preopen gives wazero, and of the files it opens, in every way
// that could change something: each is refused and nothing changes.
func TestReadOnlyRootRefusesEveryChange(t *testing.T) {
	for _, tc := range []struct {
		iface reflect.Type
		known []string
	}{
		{reflect.TypeFor[experimentalsys.FS](), append(slices.Clone(fsChanges), fsReads...)},
		{reflect.TypeFor[experimentalsys.File](), append(slices.Clone(fileChanges), fileReads...)},
	} {
		slices.Sort(tc.known)
		if diff := cmp.Diff(tc.known, methods(tc.iface)); diff != "" {
			t.Errorf("%s has methods this test does not know (-known +now):\n%s", tc.iface, diff)
		}
	}

	dir := t.TempDir()
	write(t, filepath.Join(dir, "file.txt"), "keep")
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "sub", "f"), "keep")
	if err := os.Symlink("file.txt", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("nowhere", filepath.Join(dir, "dangling")); err != nil {
		t.Fatal(err)
	}
	before := snapshot(t, dir)
	f, err := newRootFS(dir, nil, true, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.close()

	const (
		rd   = experimentalsys.O_RDONLY
		wr   = experimentalsys.O_WRONLY
		rw   = experimentalsys.O_RDWR
		app  = experimentalsys.O_APPEND
		crt  = experimentalsys.O_CREAT
		excl = experimentalsys.O_EXCL
		trn  = experimentalsys.O_TRUNC
		dirf = experimentalsys.O_DIRECTORY
		nof  = experimentalsys.O_NOFOLLOW
	)
	var refused []string
	try := func(what string, e experimentalsys.Errno) {
		if e == 0 {
			t.Errorf("%s on a read-only preopen succeeded", what)
		}
		refused = append(refused, what)
	}
	for _, p := range []string{"file.txt", "new.txt", "sub", "link", "dangling", "sub/new"} {
		for _, fl := range []experimentalsys.Oflag{rd | trn, rd | crt, rd | app, rd | crt | excl, rd | crt | trn, wr, rw, wr | app, rw | trn, wr | crt | trn, rd | trn | nof, rd | crt | nof, wr | dirf, rd | trn | dirf} {
			file, e := f.OpenFile(p, fl, 0o644)
			if file != nil {
				file.Close()
			}
			try("OpenFile "+p, e)
		}
	}
	try("Mkdir", f.Mkdir("newdir", 0o755))
	try("Mkdir existing", f.Mkdir("sub", 0o755))
	try("Chmod", f.Chmod("file.txt", 0o777))
	try("Chmod through a link", f.Chmod("link", 0o777))
	try("Rename", f.Rename("file.txt", "moved"))
	try("Rename over", f.Rename("sub/f", "file.txt"))
	try("Rmdir", f.Rmdir("sub"))
	try("Unlink", f.Unlink("file.txt"))
	try("Unlink a link", f.Unlink("link"))
	try("Link", f.Link("file.txt", "hard"))
	try("Symlink", f.Symlink("file.txt", "another"))
	try("Utimens", f.Utimens("file.txt", 0, 0))
	try("Utimens through a link", f.Utimens("link", 0, 0))

	for _, p := range []string{"file.txt", "link", "sub"} {
		fl := experimentalsys.Oflag(rd)
		if p == "sub" {
			fl |= dirf
		}
		file, e := f.OpenFile(p, fl, 0)
		if e != 0 {
			t.Fatalf("opening %s to read: errno %v", p, e)
		}
		_, e = file.Write([]byte("x"))
		try("Write "+p, e)
		_, e = file.Pwrite([]byte("x"), 0)
		try("Pwrite "+p, e)
		try("Truncate "+p, file.Truncate(0))
		try("Truncate longer "+p, file.Truncate(1<<20))
		try("File Utimens "+p, file.Utimens(0, 0))
		try("SetAppend "+p, file.SetAppend(true))
		_, e = file.Write([]byte("x"))
		try("Write after SetAppend "+p, e)
		file.Close()
	}
	if diff := cmp.Diff(before, snapshot(t, dir)); diff != "" {
		t.Errorf("the read-only tree changed (-before +after):\n%s", diff)
	}
	// Reading works.
	file, e := f.OpenFile("link", rd, 0)
	if e != 0 {
		t.Fatalf("reading: errno %v", e)
	}
	buf := make([]byte, 8)
	n, _ := file.Read(buf)
	file.Close()
	if string(buf[:n]) != "keep" {
		t.Errorf("read %q", buf[:n])
	}
}
