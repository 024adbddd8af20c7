package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestExecTerminalInRedirectedToAFile: airlock exec typed at a terminal with
// its output sent to a file or a pipe (airlock exec -- tar c . > x.tar, or
// | tee log) writes the command's bytes as the command wrote them, and its
// stderr stays apart. The command was given a terminal for all three
// streams whenever stdin was one, and the terminal's line discipline
// rewrote every newline of its output as CR LF (a tar, a patch, a binary
// came out corrupt) and sent its stderr into the file as well.
func TestExecTerminalInRedirectedToAFile(t *testing.T) {
	t.Setenv("AIRLOCK_STATE_DIR", t.TempDir())
	dir := t.TempDir()
	t.Chdir(dir)
	master, slave := openPTY(t)
	defer master.Close()
	defer slave.Close()
	readPTY(master)
	out, err := os.Create(filepath.Join(t.TempDir(), "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	var stderr bytes.Buffer
	env := &Env{Stdin: slave, Stdout: out, Stderr: &stderr, Getenv: os.Getenv}
	code := commandByName("exec").run(context.Background(), env, append(execFlags(), "--", "sh", "-c",
		`printf 'a\nb\000c\n'; echo to-stderr >&2`))
	if code != 0 {
		t.Fatalf("exit %d; stderr %s", code, &stderr)
	}
	got, err := os.ReadFile(out.Name())
	if err != nil {
		t.Fatal(err)
	}
	if want := "a\nb\x00c\n"; string(got) != want {
		t.Errorf("the file holds %q, want the command's bytes %q", got, want)
	}
	if stderr.String() != "to-stderr\n" {
		t.Errorf("stderr %q, want %q", &stderr, "to-stderr\n")
	}
}

// TestExecTerminalWithStderrRedirected: at a terminal, airlock exec --
// make 2>errors.log gives the command its terminal and keeps its stderr
// apart, as the command run directly would: the command's stderr was the
// terminal too, so the file stayed empty and the errors were shown.
func TestExecTerminalWithStderrRedirected(t *testing.T) {
	t.Setenv("AIRLOCK_STATE_DIR", t.TempDir())
	t.Chdir(t.TempDir())
	master, slave := openPTY(t)
	defer master.Close()
	defer slave.Close()
	out := readPTY(master)
	var stderr bytes.Buffer
	env := &Env{Stdin: slave, Stdout: slave, Stderr: &stderr, Getenv: os.Getenv}
	code := commandByName("exec").run(context.Background(), env, append(execFlags(), "--", "sh", "-c",
		`test -t 0 && test -t 1 && echo both-terminals; test -t 2 || echo stderr-apart; echo to-stderr >&2; echo END`))
	if code != 0 {
		t.Fatalf("exit %d; stderr %s", code, &stderr)
	}
	out.waitFor(t, "END")
	if !strings.Contains(out.String(), "stderr-apart") {
		t.Errorf("the command's stderr is the terminal: %q", out.String())
	}
	if !strings.Contains(out.String(), "both-terminals") {
		t.Errorf("the command had no terminal: %q", out.String())
	}
	if strings.Contains(out.String(), "to-stderr") {
		t.Errorf("the command's stderr reached the terminal: %q", out.String())
	}
	if stderr.String() != "to-stderr\n" {
		t.Errorf("stderr %q, want %q", &stderr, "to-stderr\n")
	}
}
