package tool

import "testing"

// In a sandbox that marks placeholders, a tool hides a candidate only
// when it carries the mark now, and a placeholder still under its
// temporary name always; elsewhere only what Hidden lists.
func TestHidden(t *testing.T) {
	marked := map[string]bool{"/w/.bashrc": true}
	sandboxed := Env{
		Hidden:        []string{"/w/.vscode"},
		Candidates:    map[string]bool{"/w/.bashrc": true, "/w/.env": true},
		IsPlaceholder: func(p string) bool { return marked[p] },
	}
	plain := Env{Hidden: []string{"/w/.vscode"}}
	for _, tt := range []struct {
		env  Env
		path string
		want bool
	}{
		{sandboxed, "/w/.vscode", true},                       // listed at the claim
		{sandboxed, "/w/.bashrc", true},                       // a candidate, marked now
		{sandboxed, "/w/.env", false},                         // a candidate, the user's own
		{sandboxed, "/w/notes.txt", false},                    // no candidate: never asked
		{sandboxed, "/w/.airlock-placeholder-7.1-.env", true}, // being made
		{plain, "/w/.vscode", true},                           // listed
		{plain, "/w/.airlock-placeholder-7.1-.env", false},    // no sandbox: a file like any
	} {
		if got := tt.env.hidden(tt.path); got != tt.want {
			t.Errorf("hidden(%s) = %v, want %v", tt.path, got, tt.want)
		}
	}
}
