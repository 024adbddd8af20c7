package repotest

import (
	"bytes"
	"encoding/json"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// goList runs `go list -json` on patterns from the module root.
func goList(t *testing.T, args ...string) []pkgInfo {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-json"}, args...)...)
	cmd.Dir = "../.."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	var pkgs []pkgInfo
	dec := json.NewDecoder(bytes.NewReader(out))
	for dec.More() {
		var p pkgInfo
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("decoding go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

type pkgInfo struct {
	ImportPath string
	Dir        string
	Name       string
	Standard   bool
	GoFiles    []string
	Deps       []string
}

// TestEveryPackageHasDoc fails any package without a package doc comment.
func TestEveryPackageHasDoc(t *testing.T) {
	for _, p := range goList(t, "./...") {
		if len(p.GoFiles) == 0 {
			continue
		}
		fset := token.NewFileSet()
		hasDoc := false
		for _, f := range p.GoFiles {
			af, err := parser.ParseFile(fset, filepath.Join(p.Dir, f), nil, parser.PackageClauseOnly|parser.ParseComments)
			if err != nil {
				t.Fatalf("parsing %s: %v", f, err)
			}
			if af.Doc != nil && strings.TrimSpace(af.Doc.Text()) != "" {
				hasDoc = true
				break
			}
		}
		if !hasDoc {
			t.Errorf("package %s has no doc comment", p.ImportPath)
		}
	}
}

// TestBoundaryImports pins what the packages that cross the sandbox boundary
// may import: wire only the standard library; tool only wire, hostrule (the
// host rules it shares with the grant and the proxy: the standard library
// and IDNA), writetmp (its temporary files' names, x/sys only) and a few
// well-kept libraries; the runner only wire and tool; the Linux sandbox's
// init only its protocol, its seccomp filter, the disk guard (x/sys only),
// the in-sandbox half of egress
// (the forwarder, standard library only, so the init runs the forwarder
// that is tested rather than a copy) and the syscall libraries (with
// airlock's own EINTR retries, package eintr, x/sys only); a capsule's
// guest package only wire; the wasm runtime no broker.
func TestBoundaryImports(t *testing.T) {
	const mod = "github.com/airlockhq/airlock"
	allowed := map[string][]string{
		mod + "/wire":            {},
		mod + "/tool":            {mod + "/wire", mod + "/internal/hostrule", mod + "/internal/redact", mod + "/internal/writetmp", "golang.org/x/net/idna", "golang.org/x/net/publicsuffix", "golang.org/x/text/", "golang.org/x/sys/"},
		mod + "/internal/runner": {mod + "/wire", mod + "/tool", mod + "/internal/hostrule", mod + "/internal/redact", mod + "/internal/writetmp", "golang.org/x/net/idna", "golang.org/x/net/publicsuffix", "golang.org/x/text/", "golang.org/x/sys/"},
		mod + "/internal/redact": {},
		// The names of write_file's temporary files, shared by the tool
		// and the broker that sweeps them: x/sys only.
		mod + "/internal/writetmp": {"golang.org/x/sys/"},
		// The one definition of the host rules: IDNA and nothing of airlock.
		mod + "/internal/hostrule": {"golang.org/x/net/idna", "golang.org/x/net/publicsuffix", "golang.org/x/text/"},
		mod + "/internal/sandbox/linux/inside": {
			mod + "/internal/sandbox/linux/initproto", mod + "/internal/sandbox/linux/seccomp",
			mod + "/internal/sandbox/linux/eintr",           // x/sys only
			mod + "/internal/sandbox/peruser",               // constants only
			mod + "/internal/sandbox/diskguard",             // x/sys only: the host's disk guard, run inside too
			mod + "/internal/egress/forward", mod + "/wire", // wire: the shared contract, standard library only
			"golang.org/x/sys/", "github.com/landlock-lsm/go-landlock", "kernel.org/pub/linux/libs/security/libcap/psx",
		},
		mod + "/grant": {"github.com/BurntSushi/toml", mod + "/internal/hostrule", "golang.org/x/net/idna", "golang.org/x/net/publicsuffix", "golang.org/x/text/"},
		// What capsule authors import is compiled into their modules:
		// only the wire contract.
		mod + "/capsule/guest": {mod + "/wire"},
		// The wasm runtime is a backend: wazero, the grant, the wire
		// contract and the disk guard (x/sys only), never the broker.
		mod + "/internal/wasm": {mod + "/wire", mod + "/grant", mod + "/internal/hostrule", mod + "/internal/sandbox/diskguard", "github.com/tetratelabs/wazero", "github.com/BurntSushi/toml", "golang.org/x/net/idna", "golang.org/x/net/publicsuffix", "golang.org/x/text/", "golang.org/x/sys/"},
		// The Podman container's init: the standard library, the native
		// sandbox's seccomp filter and the disk guard (x/sys only).
		mod + "/internal/sandbox/podman/inside": {mod + "/internal/sandbox/linux/seccomp", mod + "/internal/sandbox/diskguard", "golang.org/x/sys/"},

		// The per-user kernel bounds both backends set: constants, nothing
		// imported, so the native init may take them.
		mod + "/internal/sandbox/peruser": {},
		// The init's EINTR retries stay a syscall helper.
		mod + "/internal/sandbox/linux/eintr": {"golang.org/x/sys/"},
	}
	for pkg, ok := range allowed {
		for _, d := range goList(t, "-deps", pkg) {
			if d.Standard || d.ImportPath == pkg || allowedBy(ok, d.ImportPath) {
				continue
			}
			t.Errorf("%s imports %s, which DESIGN.md §8 does not allow it", pkg, d.ImportPath)
		}
	}
}

// allowedBy reports whether path is one of list, or lies below an entry of
// list that ends in "/" or names a module.
func allowedBy(list []string, path string) bool {
	for _, a := range list {
		if path == a || strings.HasSuffix(a, "/") && strings.HasPrefix(path, a) || strings.HasPrefix(path, a+"/") {
			return true
		}
	}
	return false
}

// TestBrokerKnowsNoRemote keeps remote mode behind the sandbox.Backend
// interface: neither the broker nor any backend may import the
// tool-server package (DESIGN.md §7, §8).
func TestBrokerKnowsNoRemote(t *testing.T) {
	const mod = "github.com/airlockhq/airlock"
	for _, pkg := range []string{mod + "/internal/broker", mod + "/internal/sandbox/...", mod + "/internal/runner"} {
		for _, d := range goList(t, "-deps", pkg) {
			if d.ImportPath == mod+"/internal/toolserver" {
				t.Errorf("%s depends on %s: remote mode is a backend, reached only through sandbox.Backend", pkg, d.ImportPath)
			}
		}
	}
}
