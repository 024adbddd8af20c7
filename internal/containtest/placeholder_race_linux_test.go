package containtest_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/sandboxtest"
)

// TestReadOnlyToolsHideOtherCallsPlaceholders: while shell calls in the
// same session make and remove the tree's placeholders (.bashrc, .vscode,
// the denied .env, ...), glob never lists one: a read-only sandbox's
// tools check the mark when they meet a protected name, and its masks
// note a placeholder made after its claim listed them.
func TestReadOnlyToolsHideOtherCallsPlaceholders(t *testing.T) {
	backend := sandboxtest.Native(t)
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "f.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	g, err := grant.FromFlags(root, grant.Flags{ReadWrite: []string{root}, Deny: []string{filepath.Join(root, ".env")}})
	if err != nil {
		t.Fatal(err)
	}
	s := sessionsOn(backend)(t, g)
	defer s.Close()
	call := func(name string, args map[string]any) (string, error) {
		b, err := json.Marshal(args)
		if err != nil {
			return "", err
		}
		r, err := s.Call(context.Background(), name, b)
		if err != nil {
			return "", err
		}
		return r.Output.Content, nil
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := call("shell", map[string]any{"command": "true", "cwd": root}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	const globs = 200
	bad := 0
	for i := range globs {
		out, err := call("glob", map[string]any{"pattern": "*", "path": root})
		if err != nil {
			t.Error(err)
			break
		}
		if strings.Contains(out, ".env") || strings.Contains(out, ".bashrc") || strings.Contains(out, ".vscode") {
			bad++
			if bad < 4 {
				t.Errorf("glob %d lists placeholders: %q", i, out)
			}
		}
	}
	close(stop)
	wg.Wait()
	if bad > 0 {
		t.Errorf("%d of %d globs listed placeholders", bad, globs)
	}
}
