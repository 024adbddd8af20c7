// Command capsule-agent is a worked example of a capsule: an agent-style
// loop, compiled to WebAssembly, that does its work only through airlock's
// tools. It greps the working directory for a marker (default TODO), reads
// each file that has it, edits the marker to DONE, and checks its work with
// a background command, printing what it did.
//
// Build and run it (see docs/wasm.md):
//
//	GOOS=wasip1 GOARCH=wasm go build -o examples/capsule-agent/agent.wasm ./examples/capsule-agent
//	sha256sum examples/capsule-agent/agent.wasm   # pin it in capsule.toml
//	airlock run ./examples/capsule-agent -- TODO
//
// Its capsule.toml asks for the working directory read-write and the five
// tools it calls; airlock refuses to start it if any of that is not granted.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/airlockhq/airlock/capsule/guest"
)

func main() {
	marker := "TODO"
	if len(os.Args) > 1 {
		marker = os.Args[1]
	}
	if err := agent(marker); err != nil {
		fmt.Fprintln(os.Stderr, "capsule-agent:", err)
		os.Exit(1)
	}
}

// step is one tool call, printed as the agent goes.
func step(tool string, args any) (*guest.Output, error) {
	a, _ := json.Marshal(args)
	fmt.Printf("→ %s %s\n", tool, a)
	out, err := guest.Call(tool, args)
	if err != nil {
		return nil, err
	}
	if out.IsError {
		return out, fmt.Errorf("%s failed: %s", tool, body(out.Content))
	}
	return out, nil
}

// body drops airlock's label line from a tool's content.
func body(content string) string {
	if strings.HasPrefix(content, "[airlock") {
		if _, rest, ok := strings.Cut(content, "\n"); ok {
			return rest
		}
		return ""
	}
	return content
}

func agent(marker string) error {
	// 1. Find the files that need work.
	out, err := step("grep", map[string]any{"pattern": marker, "output_mode": "files_with_matches"})
	if err != nil {
		return err
	}
	var files []string
	for _, l := range strings.Split(body(out.Content), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "[") {
			files = append(files, l)
		}
	}
	fmt.Printf("found %d file(s) with %s\n", len(files), marker)

	// 2. Read each one, then edit the marker away.
	for _, f := range files {
		out, err := step("read_file", map[string]any{"path": f})
		if err != nil {
			return err
		}
		n := strings.Count(body(out.Content), marker)
		if _, err := step("edit_file", map[string]any{"path": f, "old_string": marker, "new_string": "DONE", "replace_all": true}); err != nil {
			return err
		}
		fmt.Printf("%s: replaced %d %s\n", f, n, marker)
	}

	// 3. Check the work with a background command, then wait for it.
	out, err = step("shell", map[string]any{"command": "grep -rl " + shellQuote(marker) + " . | wc -l", "run_in_background": true})
	if err != nil {
		return err
	}
	id := out.Meta.WorkID
	if id == "" {
		return fmt.Errorf("shell returned no work id: %s", body(out.Content))
	}
	out, err = step("background_command", map[string]any{"operation": "wait", "work_id": id, "wait_secs": 60})
	if err != nil {
		return err
	}
	fmt.Printf("check: %s\n", strings.TrimSpace(body(out.Content)))
	return nil
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }
