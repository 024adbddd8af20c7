package airlock_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/airlockhq/airlock"
)

// TestMain plays airlock's hidden roles, as a program's main does by calling
// airlock.Init first.
func TestMain(m *testing.M) {
	airlock.Init()
	os.Exit(m.Run())
}

// Open a session on a project directory, then run tool calls in it: each
// call gets a fresh sandbox that sees only the directory (read-write) and the
// system's read-only directories.
func Example() {
	dir, _ := os.MkdirTemp("", "airlock-example")
	defer os.RemoveAll(dir)
	records, _ := os.MkdirTemp("", "airlock-records")
	defer os.RemoveAll(records)

	s, err := airlock.Open(&airlock.Options{Dir: dir, RecordsDir: records})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	ctx := context.Background()

	s.Call(ctx, "write_file", map[string]any{"path": "notes.txt", "content": "remember the milk\n"})
	res, _ := s.Call(ctx, "shell", map[string]any{"command": "wc -l < notes.txt; ls /home 2>&1 | head -1"})
	fmt.Println(body(res.Text))

	res, _ = s.Call(ctx, "read_file", map[string]any{"path": "/etc/shadow"})
	fmt.Println(res.Refused)
	// Output:
	// 1
	// ls: cannot access '/home': No such file or directory
	// [exit 0]
	// true
}

// body drops airlock's label line.
func body(text string) string {
	_, rest, _ := strings.Cut(text, "\n")
	return strings.TrimSpace(rest)
}

func ExampleTools() {
	for _, t := range airlock.Tools()[:3] {
		fmt.Println(t.Name)
	}
	// Output:
	// read_file
	// write_file
	// edit_file
}
