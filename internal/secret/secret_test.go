package secret

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const value = "tok-5ecret/Value+with=odd&chars"

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// Load reads env: and file: sources, trims only a file's trailing line
// ending, and names the source, never the value, in every error.
func TestLoad(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	plain := file("plain", value)
	lf := file("lf", value+"\n")
	crlf := file("crlf", value+"\r\n\n")
	spaced := file("spaced", "  "+value+" \t\n")
	inner := file("inner", "line one\nline two\n")
	empty := file("empty", "")
	onlyNL := file("only-newline", "\n")
	getenv := env(map[string]string{"TOKEN": value, "SPACED": " " + value + " ", "A:B": value})

	ok := []struct {
		source, want string
	}{
		{"env:TOKEN", value},
		{"env:SPACED", " " + value + " "}, // the environment is taken as it is
		{"env:A:B", value},                // the name is everything after the first colon
		{"file:" + plain, value},
		{"file:" + lf, value},
		{"file:" + crlf, value},
		{"file:" + spaced, "  " + value + " \t"}, // only line endings are trimmed
		{"file:" + inner, "line one\nline two"},
	}
	for _, tt := range ok {
		got, err := Load(tt.source, getenv)
		if err != nil || got != tt.want {
			t.Errorf("Load(%q) = %q, %v; want %q", tt.source, got, err, tt.want)
		}
	}

	bad := []struct {
		source string
		want   string  // the whole message
		is     []error // what errors.Is must find
	}{
		{"", `secret source "": want env:NAME or file:PATH`, nil},
		{"TOKEN", `secret source "TOKEN": want env:NAME or file:PATH`, nil},
		{"env:", `secret source "env:": want env:NAME or file:PATH`, nil},
		{"file:", `secret source "file:": want env:NAME or file:PATH`, nil},
		{"ENV:TOKEN", `secret source "ENV:TOKEN": unknown kind "ENV" (want env or file)`, nil},
		{"vault:kv/token", `secret source "vault:kv/token": unknown kind "vault" (want env or file)`, nil},
		{"env:UNSET", `secret source "env:UNSET": secret is empty`, []error{ErrEmpty}},
		{"file:" + empty, `secret source "file:` + empty + `": secret is empty`, []error{ErrEmpty}},
		{"file:" + onlyNL, `secret source "file:` + onlyNL + `": secret is empty`, []error{ErrEmpty}},
		{"file:" + filepath.Join(dir, "absent"), `secret source "file:` + filepath.Join(dir, "absent") + `": open ` + filepath.Join(dir, "absent") + `: no such file or directory`, []error{fs.ErrNotExist}},
		{"file:" + dir, `secret source "file:` + dir + `": read ` + dir + `: is a directory`, nil},
	}
	for _, tt := range bad {
		got, err := Load(tt.source, getenv)
		if err == nil {
			t.Errorf("Load(%q) = %q, want an error", tt.source, got)
			continue
		}
		if got != "" {
			t.Errorf("Load(%q) returned %q with its error", tt.source, got)
		}
		if err.Error() != tt.want {
			t.Errorf("Load(%q) error %q, want %q", tt.source, err, tt.want)
		}
		for _, e := range tt.is {
			if !errors.Is(err, e) {
				t.Errorf("Load(%q) error %v is not %v", tt.source, err, e)
			}
		}
	}
}

// A file the broker cannot read (mode 0, as an unprivileged user) fails with
// the source and the reason, never the value.
func TestLoadUnreadableFile(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads a mode-0 file")
	}
	p := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(p, []byte(value), 0); err != nil {
		t.Fatal(err)
	}
	_, err := Load("file:"+p, os.Getenv)
	if !errors.Is(err, fs.ErrPermission) || strings.Contains(err.Error(), value) || !strings.Contains(err.Error(), `"file:`+p+`"`) {
		t.Fatalf("error %v: want a permission error naming the source only", err)
	}
}
