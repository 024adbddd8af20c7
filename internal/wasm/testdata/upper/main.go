// Command upper is a test wasm tool: it reads {"text": ..., "path": ...}
// from stdin and prints the text upper-cased (or the file's first line),
// and how many calls this instance has served: always 1, since every call
// gets a fresh instance.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
)

var calls int

func main() {
	calls++
	var args struct {
		Text string `json:"text"`
		Path string `json:"path"`
		Fail bool   `json:"fail"`
	}
	if err := json.NewDecoder(os.Stdin).Decode(&args); err != nil {
		fmt.Println("bad arguments:", err)
		os.Exit(1)
	}
	if args.Fail {
		fmt.Fprintln(os.Stderr, "asked to fail")
		fmt.Println("failed as asked")
		os.Exit(3)
	}
	if args.Path != "" {
		f, err := os.Open(args.Path)
		if err != nil {
			fmt.Println("cannot open:", err)
			os.Exit(1)
		}
		sc := bufio.NewScanner(f)
		sc.Scan()
		args.Text = sc.Text()
	}
	fmt.Printf("%s (calls %d)\n", strings.ToUpper(args.Text), calls)
}
