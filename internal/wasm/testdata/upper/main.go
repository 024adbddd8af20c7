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
	"time"
)

var calls int

func main() {
	calls++
	var args struct {
		Text string `json:"text"`
		Path string `json:"path"`
		Fail bool   `json:"fail"`
		// Grow makes the file at Grow Size bytes long: by writing them
		// (at At, when set, with WriteAt), or with Truncate.
		Grow     string `json:"grow"`
		Size     int64  `json:"size"`
		At       int64  `json:"at"`
		Truncate bool   `json:"truncate"`
		// Hold is how long to wait after the grow (a duration), as a
		// command that fills a disk and goes on running.
		Hold string `json:"hold"`
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
	if args.Grow != "" {
		grow(args.Grow, args.Size, args.At, args.Truncate)
		if d, err := time.ParseDuration(args.Hold); err == nil {
			time.Sleep(d)
		}
		return
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

// grow writes size bytes to p (at the offset at, when non-zero), or
// truncates it to size, and prints what happened.
func grow(p string, size, at int64, truncate bool) {
	if truncate {
		if err := os.Truncate(p, size); err != nil {
			fmt.Println("err", err)
			return
		}
		fmt.Println("ok truncated")
		return
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		fmt.Println("err", err)
		return
	}
	defer f.Close()
	if at != 0 {
		n, err := f.WriteAt(make([]byte, size), at)
		fmt.Println("wrote", n, err)
		return
	}
	var n int64
	chunk := make([]byte, 64<<10)
	for n < size {
		k, err := f.Write(chunk[:min(int64(len(chunk)), size-n)])
		n += int64(k)
		if err != nil {
			fmt.Println("wrote", n, err)
			return
		}
	}
	fmt.Println("wrote", n)
}
