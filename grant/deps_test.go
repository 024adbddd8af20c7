package grant

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestImports pins what the package may import: the standard library, the
// TOML decoder and hostrule (the host rules it shares with the egress proxy,
// itself only the standard library, IDNA and the public suffix list). Grant
// checking stays pure and light.
func TestImports(t *testing.T) {
	allowed := map[string]bool{"github.com/BurntSushi/toml": true, "github.com/airlockhq/airlock/internal/hostrule": true}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		ast, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range ast.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			std := !strings.Contains(strings.Split(p, "/")[0], ".")
			if !std && !allowed[p] {
				t.Errorf("%s imports %s; grant may import only the standard library, toml and hostrule", f, p)
			}
		}
		if f == "doc.go" && ast.Doc == nil {
			t.Errorf("doc.go has no package comment")
		}
	}
}

// TestNoRegexpAtInit: every airlock process (the CLI and each sandbox's
// init) imports grant, kubereq and mcpserver, so a regular expression
// compiled at package initialisation costs every start; they are compiled
// on first use.
func TestNoRegexpAtInit(t *testing.T) {
	var files []string
	for _, pattern := range []string{"*.go", "../internal/kube/kubereq/*.go", "../internal/mcpserver/*.go"} {
		m, err := filepath.Glob(pattern)
		if err != nil || len(m) == 0 {
			t.Fatalf("%s: %v (no files)", pattern, err)
		}
		files = append(files, m...)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, s := range gd.Specs {
				for _, v := range s.(*ast.ValueSpec).Values {
					call, ok := v.(*ast.CallExpr)
					if !ok {
						continue
					}
					if sel, ok := call.Fun.(*ast.SelectorExpr); ok {
						if x, ok := sel.X.(*ast.Ident); ok && x.Name == "regexp" {
							t.Errorf("%s: a package-level regexp.%s runs at every start; compile it on first use (sync.OnceValue)", f, sel.Sel.Name)
						}
					}
				}
			}
		}
	}
}
