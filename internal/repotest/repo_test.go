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
// may import: wire only the standard library; tool only wire and a few
// well-kept libraries; the runner only wire and tool.
func TestBoundaryImports(t *testing.T) {
	const mod = "github.com/airlockhq/airlock"
	allowed := map[string][]string{
		mod + "/wire":            {},
		mod + "/tool":            {mod + "/wire", "golang.org/x/sys/"},
		mod + "/internal/runner": {mod + "/wire", mod + "/tool", "golang.org/x/sys/"},
		mod + "/grant":           {"github.com/BurntSushi/toml", "golang.org/x/net/idna", "golang.org/x/text/"},
		// The Podman container's init: the standard library and the
		// native sandbox's seccomp filter.
		mod + "/internal/sandbox/podman/inside": {mod + "/internal/sandbox/linux/seccomp", "golang.org/x/sys/"},
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
