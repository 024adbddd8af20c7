package grant_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/airlockhq/airlock/grant"
)

func Example() {
	dir, err := os.MkdirTemp("", "grant-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "grant.toml")
	err = os.WriteFile(file, []byte(`
[paths]
read_write = ["."]
[network]
hosts = ["*.pypi.org"]
[tools.shell]
time = "10m"
`), 0o644)
	if err != nil {
		panic(err)
	}

	g, err := grant.Load(file)
	if err != nil {
		panic(err)
	}
	d := g.Check(grant.Call{Tool: "read_file", Paths: []grant.PathUse{{Path: "/etc/passwd"}}})
	fmt.Println(d.Allowed)
	d = g.Check(grant.Call{Tool: "write_file", Paths: []grant.PathUse{{Path: ".git/hooks/pre-commit", Write: true}}})
	fmt.Println(d.Allowed)
	fmt.Println(g.AllowHost("files.pypi.org", 443))
	fmt.Println(g.AllowHost("pypi.org", 443))
	fmt.Println(g.LimitsFor("shell").Time, g.LimitsFor("grep").Time)
	// Output:
	// false
	// false
	// network.hosts "*.pypi.org" true
	//  false
	// 10m0s 2m0s
}

func ExampleParse() {
	_, err := grant.Parse([]byte(`
[limits]
time = "90s"
memory = "12XB"
`), "grant.toml", "/")
	fmt.Println(err)
	// Output:
	// grant.toml:4: limits.memory: "12XB" is not a size (use bytes or a unit: "512KB", "64MiB", "1GiB")
}
