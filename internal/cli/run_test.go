package cli

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/wasm/wasmtest"
)

// capsuleDir makes a capsule directory holding the module built from the Go
// package pkg and a capsule.toml pinning it, with grant as its [grant] part.
func capsuleDir(t *testing.T, pkg, name, grantTOML string) (dir, sum string) {
	t.Helper()
	b, err := os.ReadFile(wasmtest.Build(t, pkg))
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "mod.wasm"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(b)
	sum = hex.EncodeToString(h[:])
	manifest := "name = \"" + name + "\"\nversion = \"1.2.3\"\nmodule = \"mod.wasm\"\nsha256 = \"" + sum + "\"\n\n[grant]\n" + grantTOML
	if err := os.WriteFile(filepath.Join(dir, "capsule.toml"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, sum
}

// runCLI runs airlock with args in the directory ws and returns its exit
// status, stdout and stderr.
func runCLI(t *testing.T, ws string, args ...string) (int, string, string) {
	t.Helper()
	t.Chdir(ws)
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// runEnv points the records into the test's own directory.
func runEnv(t *testing.T) (state string) {
	state = t.TempDir()
	t.Setenv("AIRLOCK_STATE_DIR", state)
	return state
}

const probePkg = "../wasm/testdata/probe"

func TestRunRefusesWhatIsNotGranted(t *testing.T) {
	runEnv(t)
	ws, other := t.TempDir(), t.TempDir()
	dir, _ := capsuleDir(t, probePkg, "greedy", `read_write = [".", "`+other+`"]
hosts = ["api.example.com"]
tools = ["read_file"]
env = ["TOKEN"]
[grant.limits]
memory = "2GiB"
`)
	code, stdout, stderr := runCLI(t, ws, "run", dir, "--", "args", "started")
	if code != exitFailure {
		t.Errorf("exit %d, want %d", code, exitFailure)
	}
	if strings.Contains(stdout, "started") {
		t.Errorf("the capsule started: %q", stdout)
	}
	for _, want := range []string{
		"refusing greedy",
		"--rw " + other,
		"--allow-host api.example.com",
		"--env TOKEN=VALUE",
		"--memory 2GiB",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "--rw "+ws) {
		t.Errorf("the granted working directory is listed as missing:\n%s", stderr)
	}
}

func TestRunRefusesAModuleWhoseHashDiffers(t *testing.T) {
	runEnv(t)
	ws := t.TempDir()
	dir, _ := capsuleDir(t, probePkg, "tampered", "tools = []\n")
	// The module changes after it was pinned.
	f, err := os.OpenFile(filepath.Join(dir, "mod.wasm"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte{0, 0}) // an empty custom section: still a valid module
	f.Close()
	code, stdout, stderr := runCLI(t, ws, "run", dir, "--", "args", "started")
	if code != exitFailure || strings.Contains(stdout, "started") {
		t.Errorf("exit %d, stdout %q: want refused before it starts", code, stdout)
	}
	if !strings.Contains(stderr, "sha256 does not match") || !strings.Contains(stderr, "refusing to run it") {
		t.Errorf("stderr: %s", stderr)
	}
}

func TestRunBareModuleUnderWhatIsGranted(t *testing.T) {
	runEnv(t)
	ws, ro := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(ro, "data"), []byte("ro data"), 0o644); err != nil {
		t.Fatal(err)
	}
	mod := wasmtest.Build(t, probePkg)
	code, stdout, stderr := runCLI(t, ws, "run", "--unsandboxed", "--ro", ro, "--env", "A=1", mod, "--", "read", filepath.Join(ro, "data"))
	if code != 0 || !strings.Contains(stdout, `"ro data"`) {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, stdout, _ = runCLI(t, ws, "run", "--unsandboxed", "--ro", ro, mod, "--", "write", filepath.Join(ro, "x"), "y")
	if code != 0 || !strings.HasPrefix(stdout, "err") {
		t.Errorf("a write to a --ro directory: exit %d, %q", code, stdout)
	}
	code, stdout, _ = runCLI(t, ws, "run", "--unsandboxed", "--env", "A=1", mod, "--", "env")
	if code != 0 || stdout != "ok A=1\n" {
		t.Errorf("env: exit %d, %q", code, stdout)
	}
	if code, _, _ := runCLI(t, ws, "run", "--unsandboxed", mod, "--", "exit", "3"); code != 3 {
		t.Errorf("exit status %d, want the capsule's 3", code)
	}
	code, _, stderr = runCLI(t, ws, "run", "--unsandboxed", "--time", "300ms", mod, "--", "loop")
	if code != exitRunTime || !strings.Contains(stderr, "time limit") {
		t.Errorf("a loop: exit %d, stderr %q", code, stderr)
	}
}

// TestRunRefusedToolCallNamesTheMissingGrant: a capsule's tool call goes
// through the broker, which refuses what the capsule's grant does not
// give and says which rule; the audit record names the capsule.
func TestRunRefusedToolCallNamesTheMissingGrant(t *testing.T) {
	state := runEnv(t)
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "hello.txt"), []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir, sum := capsuleDir(t, probePkg, "reader", "read_write = [\".\"]\ntools = [\"read_file\"]\n")
	for _, tc := range []struct{ tool, args, want string }{
		{"shell", `{"command":"id"}`, `tool \"shell\" is not enabled by the grant`},
		{"read_file", `{"path":"/etc/passwd"}`, "outside every granted path"},
		{"read_file", `{"path":"hello.txt","bogus":1}`, `unknown field \"bogus\"`},
	} {
		code, stdout, stderr := runCLI(t, ws, "run", "--unsandboxed", dir, "--", "tool", tc.tool, tc.args)
		if code != 0 || !strings.Contains(stdout, tc.want) || !strings.Contains(stdout, `"is_error":true`) {
			t.Errorf("%s %s: exit %d, stdout %q, stderr %q; want a refusal naming %q", tc.tool, tc.args, code, stdout, stderr, tc.want)
		}
	}
	_, stdout, _ := runCLI(t, ws, "run", "--unsandboxed", dir, "--", "tool", "read_file", `{"path":"hello.txt"}`)
	if !strings.Contains(stdout, "hello") || strings.Contains(stdout, `"is_error":true`) {
		t.Errorf("an allowed call: %q", stdout)
	}
	recs := records(t, state)
	var calls int
	for _, r := range recs {
		if r.Kind == audit.KindSession && r.Decision == "open" && (r.Capsule == nil || r.Capsule.Name != "reader") {
			t.Errorf("session record without the capsule: %+v", r)
		}
		if r.Kind != audit.KindCall {
			continue
		}
		calls++
		if r.Capsule == nil || r.Capsule.Name != "reader" || r.Capsule.Version != "1.2.3" || r.Capsule.SHA256 != sum {
			t.Errorf("call record %s does not name the capsule: %+v", r.CallID, r.Capsule)
		}
	}
	if calls != 4 {
		t.Errorf("%d call records, want 4", calls)
	}
}

// records reads every audit record under the records directory.
func records(t *testing.T, state string) []audit.Record {
	t.Helper()
	var out []audit.Record
	files, _ := filepath.Glob(filepath.Join(state, "*", audit.FileName))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			var r audit.Record
			if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			out = append(out, r)
		}
	}
	return out
}

// exampleCapsule builds examples/capsule-agent and pins it with its own
// capsule.toml, in a directory outside the workspace.
func exampleCapsule(t *testing.T) string {
	t.Helper()
	src := "../../examples/capsule-agent"
	b, err := os.ReadFile(wasmtest.Build(t, src))
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := os.ReadFile(filepath.Join(src, "capsule.toml"))
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(b)
	manifest = regexp.MustCompile(`(?m)^sha256 = .*$`).ReplaceAll(manifest, []byte(`sha256 = "`+hex.EncodeToString(h[:])+`"`))
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "agent.wasm"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "capsule.toml"), manifest, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// wasmToolGrant writes a grant file adding the test tool "upper" (built
// from internal/wasm/testdata/upper) and returns its path.
func wasmToolGrant(t *testing.T, ws string) string {
	t.Helper()
	mod := wasmtest.Build(t, "../wasm/testdata/upper")
	b, err := os.ReadFile(mod)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(b)
	g := filepath.Join(t.TempDir(), "grant.toml")
	text := `[paths]
read_write = ["` + ws + `"]
[tools]
enabled = ["read_file"]
[tools.wasm.upper]
module = "` + mod + `"
sha256 = "` + hex.EncodeToString(h[:]) + `"
description = "Upper-cases the text it is given."
schema = '{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}'
time = "20s"
`
	if err := os.WriteFile(g, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return g
}

func TestWasmToolIsListedAndCalled(t *testing.T) {
	state := runEnv(t)
	ws := t.TempDir()
	g := wasmToolGrant(t, ws)
	code, stdout, stderr := runCLI(t, ws, "tools", "--grant", g)
	if code != 0 || !strings.Contains(stdout, `"name": "upper"`) || !strings.Contains(stdout, "Upper-cases the text") || !strings.Contains(stdout, `"required"`) {
		t.Errorf("airlock tools: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for i := 0; i < 2; i++ {
		code, stdout, stderr = runCLI(t, ws, "call", "--unsandboxed", "--grant", g, "upper", `{"text":"hi"}`)
		if code != 0 || !strings.Contains(stdout, "HI (calls 1)") || !strings.Contains(stdout, "upper · wasm sandbox") {
			t.Errorf("call %d: exit %d\n%s\n%s", i, code, stdout, stderr)
		}
	}
	var seen bool
	for _, r := range records(t, state) {
		if r.Kind == audit.KindCall && r.Tool == "upper" {
			seen = true
			if r.Backend != "wasm" || r.Class != "ok" {
				t.Errorf("record %+v", r)
			}
		}
	}
	if !seen {
		t.Error("no audit record of the wasm tool")
	}
	// Not a JSON object: refused before the module runs.
	code, stdout, _ = runCLI(t, ws, "call", "--unsandboxed", "--grant", g, "upper", `[1]`)
	if code != exitFailure || !strings.Contains(stdout, "must be a JSON object") {
		t.Errorf("array arguments: exit %d %q", code, stdout)
	}
	// Arguments that do not fit the schema the grant declares (its
	// required "text", a string) are refused before the module runs,
	// saying what did not fit.
	for _, args := range []string{`{}`, `{"text":5}`} {
		code, stdout, _ = runCLI(t, ws, "call", "--unsandboxed", "--grant", g, "upper", args)
		if code != exitFailure || !strings.Contains(stdout, "do not fit the tool's schema") || !strings.Contains(stdout, "text") {
			t.Errorf("arguments %s: exit %d %q; want a refusal naming the field", args, code, stdout)
		}
	}
}

func TestWasmToolInMCPToolsList(t *testing.T) {
	runEnv(t)
	ws := t.TempDir()
	g := wasmToolGrant(t, ws)
	t.Chdir(ws)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan int)
	var stderr bytes.Buffer
	go func() {
		done <- Main(context.Background(), []string{"mcp", "--unsandboxed", "--grant", g}, inR, outW, &stderr)
		outW.Close()
	}()
	replies := bufio.NewScanner(outR)
	replies.Buffer(nil, 1<<20)
	ask := func(lines ...string) string {
		for _, l := range lines {
			if _, err := io.WriteString(inW, l+"\n"); err != nil {
				t.Fatal(err)
			}
		}
		if !replies.Scan() {
			t.Fatalf("no reply: %v\n%s", replies.Err(), stderr.String())
		}
		return replies.Text()
	}
	ask(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	list := ask(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if !strings.Contains(list, `"name":"upper"`) || !strings.Contains(list, "Upper-cases the text") {
		t.Errorf("tools/list lacks the wasm tool:\n%s", list)
	}
	res := ask(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"upper","arguments":{"text":"via mcp"}}}`)
	if !strings.Contains(res, "VIA MCP (calls 1)") {
		t.Errorf("tools/call of the wasm tool:\n%s", res)
	}
	inW.Close()
	<-done
}

// TestRunNestedReadOnlyStaysReadOnly: with --rw P --ro P/sub, the capsule
// cannot write P/sub, not through a symlink it plants in P either (red
// team: "symlink sub P/l; write P/l/f" rewrote a read-only file).
func TestRunNestedReadOnlyStaysReadOnly(t *testing.T) {
	runEnv(t)
	P, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(P, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, "f"), []byte("orig"), 0o644); err != nil {
		t.Fatal(err)
	}
	mod := wasmtest.Build(t, probePkg)
	runProbe := func(args ...string) string {
		t.Helper()
		code, stdout, stderr := runCLI(t, P, append([]string{"run", "--unsandboxed", "--rw", P, "--ro", sub, mod, "--"}, args...)...)
		if code != 0 {
			t.Fatalf("%v: exit %d, %s", args, code, stderr)
		}
		return stdout
	}
	if out := runProbe("symlink", "sub", filepath.Join(P, "l")); out != "ok\n" {
		t.Fatalf("planting the link: %q", out)
	}
	for _, args := range [][]string{
		{"write", filepath.Join(sub, "f"), "PWNED"},
		{"write", filepath.Join(P, "l", "f"), "PWNED"},
		{"write", filepath.Join(P, "l", "new"), "x"},
		{"link", filepath.Join(sub, "f"), filepath.Join(P, "hard")},
	} {
		if out := runProbe(args...); !strings.HasPrefix(out, "err") {
			t.Errorf("%v: %q, want refused", args, out)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(sub, "f")); string(b) != "orig" {
		t.Errorf("sub/f is %q", b)
	}
	if _, err := os.Lstat(filepath.Join(sub, "new")); err == nil {
		t.Error("a file was created in the read-only directory")
	}
}

// TestCapsuleAndWasmToolKeepOffAirlocksOwnFiles: airlock's records and
// the grant file are kept from a capsule's files and a wasm tool's as
// from every sandbox (red team: a capsule emptied the audit log and
// rewrote the grant file, which then gave the next call /tmp).
func TestCapsuleAndWasmToolKeepOffAirlocksOwnFiles(t *testing.T) {
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(ws, ".state")
	t.Setenv("AIRLOCK_STATE_DIR", state)
	mod := wasmtest.Build(t, "../wasm/testdata/upper")
	b, err := os.ReadFile(mod)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(b)
	g := filepath.Join(ws, "grant.toml")
	text := `[paths]
read_write = ["."]
[tools]
enabled = ["read_file"]
[tools.wasm.upper]
module = "` + mod + `"
sha256 = "` + hex.EncodeToString(h[:]) + `"
description = "Upper-cases the text it is given."
read_write = ["."]
`
	if err := os.WriteFile(g, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	probe := wasmtest.Build(t, probePkg)
	if code, _, stderr := runCLI(t, ws, "run", "--unsandboxed", "--grant", g, probe, "--", "exit", "0"); code != 0 {
		t.Fatalf("first run: exit %d, %s", code, stderr)
	}
	logs, _ := filepath.Glob(filepath.Join(state, "ses_*", audit.FileName))
	if len(logs) == 0 {
		t.Fatal("no audit records")
	}
	auditLog := logs[0]
	before, _ := os.ReadFile(auditLog)
	for _, args := range [][]string{
		{"ls", state},
		{"read", auditLog},
		{"write", auditLog, ""},
		{"write", g, "[paths]\nread_write = [\"/\"]\n"},
	} {
		code, stdout, stderr := runCLI(t, ws, append([]string{"run", "--unsandboxed", "--grant", g, probe, "--"}, args...)...)
		if code != 0 || !strings.HasPrefix(stdout, "err") {
			t.Errorf("capsule %v: exit %d, %q %s, want refused", args, code, stdout, stderr)
		}
	}
	code, stdout, _ := runCLI(t, ws, "call", "--unsandboxed", "--grant", g, "upper", `{"path":"`+auditLog+`"}`)
	if strings.Contains(stdout, "SESSION") || !strings.Contains(stdout, "cannot open") {
		t.Errorf("the wasm tool read the audit records: exit %d %q", code, stdout)
	}
	if after, _ := os.ReadFile(g); string(after) != text {
		t.Errorf("the grant file changed:\n%s", after)
	}
	if after, _ := os.ReadFile(auditLog); len(after) < len(before) || !bytes.HasPrefix(after, before) {
		t.Errorf("the audit records were changed: %d bytes, were %d", len(after), len(before))
	}
}

// TestWasmToolDirectorySwappedMidSession: in a long session (airlock mcp)
// a wasm tool's directory replaced by a symlink after the session started
// (as a shell call of the session can) does not lead the tool outside the
// grant (red team: the tool read and wrote /outside).
func TestWasmToolDirectorySwappedMidSession(t *testing.T) {
	runEnv(t)
	ws, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	work := filepath.Join(ws, "work")
	if err := os.Mkdir(work, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "file"), []byte("inside"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "file"), []byte("outside the grant"), 0o644); err != nil {
		t.Fatal(err)
	}
	mod := wasmtest.Build(t, "../wasm/testdata/upper")
	b, err := os.ReadFile(mod)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(b)
	g := filepath.Join(t.TempDir(), "grant.toml")
	text := `[paths]
read_write = ["` + ws + `"]
[tools.wasm.upper]
module = "` + mod + `"
sha256 = "` + hex.EncodeToString(h[:]) + `"
description = "Upper-cases the text it is given."
read_write = ["` + work + `"]
`
	if err := os.WriteFile(g, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(ws)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan int)
	var stderr bytes.Buffer
	go func() {
		done <- Main(context.Background(), []string{"mcp", "--unsandboxed", "--grant", g}, inR, outW, &stderr)
		outW.Close()
	}()
	replies := bufio.NewScanner(outR)
	replies.Buffer(nil, 1<<20)
	ask := func(lines ...string) string {
		for _, l := range lines {
			if _, err := io.WriteString(inW, l+"\n"); err != nil {
				t.Fatal(err)
			}
		}
		if !replies.Scan() {
			t.Fatalf("no reply: %v\n%s", replies.Err(), stderr.String())
		}
		return replies.Text()
	}
	ask(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	read := `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"upper","arguments":{"path":"` + filepath.Join(work, "file") + `"}}}`
	if res := ask(`{"jsonrpc":"2.0","method":"notifications/initialized"}`, fmt.Sprintf(read, 2)); !strings.Contains(res, "INSIDE") {
		t.Fatalf("before the swap:\n%s", res)
	}
	if err := os.Rename(work, work+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, work); err != nil {
		t.Fatal(err)
	}
	if res := ask(fmt.Sprintf(read, 3)); strings.Contains(res, "OUTSIDE THE GRANT") {
		t.Errorf("the wasm tool read outside the grant through the swapped directory:\n%s", res)
	}
	inW.Close()
	<-done
}
