// Command probe is a test capsule: each subcommand tries one thing and
// prints what happened, one line per attempt, "ok ..." or "err ...".
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/airlockhq/airlock/capsule/guest"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Println("usage: probe CMD ...")
		os.Exit(2)
	}
	args := os.Args[2:]
	switch os.Args[1] {
	case "ls":
		ents, err := os.ReadDir(args[0])
		if err != nil {
			fmt.Println("err", err)
			return
		}
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		sort.Strings(names)
		fmt.Println("ok", strings.Join(names, " "))
	case "read":
		for _, p := range args {
			b, err := os.ReadFile(p)
			if err != nil {
				fmt.Println("err", p, err)
				continue
			}
			fmt.Printf("ok %s %q\n", p, b)
		}
	case "write":
		if err := os.WriteFile(args[0], []byte(args[1]), 0o644); err != nil {
			fmt.Println("err", err)
			return
		}
		fmt.Println("ok")
	case "mutate":
		// Every kind of write on one path.
		p := args[0]
		try := func(what string, err error) {
			if err != nil {
				fmt.Println("err", what, err)
			} else {
				fmt.Println("ok", what)
			}
		}
		try("create", os.WriteFile(filepath.Join(p, "new.txt"), []byte("x"), 0o644))
		f, err := os.OpenFile(filepath.Join(p, "file.txt"), os.O_WRONLY|os.O_APPEND, 0)
		if err == nil {
			f.Close()
		}
		try("append", err)
		try("mkdir", os.Mkdir(filepath.Join(p, "d"), 0o755))
		try("remove", os.Remove(filepath.Join(p, "file.txt")))
		try("rename", os.Rename(filepath.Join(p, "file.txt"), filepath.Join(p, "moved.txt")))
		try("chmod", os.Chmod(filepath.Join(p, "file.txt"), 0o777))
		try("symlink", os.Symlink("file.txt", filepath.Join(p, "link")))
		try("chtimes", os.Chtimes(filepath.Join(p, "file.txt"), time.Unix(0, 0), time.Unix(0, 0)))
		try("truncate", os.Truncate(filepath.Join(p, "file.txt"), 0))
	case "open":
		// open PATH FLAG...: os.OpenFile with the named flags (rdonly,
		// wronly, rdwr, append, creat, excl, trunc), then closed.
		flag := 0
		for _, f := range args[1:] {
			flag |= map[string]int{"rdonly": os.O_RDONLY, "wronly": os.O_WRONLY, "rdwr": os.O_RDWR, "append": os.O_APPEND, "creat": os.O_CREATE, "excl": os.O_EXCL, "trunc": os.O_TRUNC}[f]
		}
		f, err := os.OpenFile(args[0], flag, 0o644)
		if err != nil {
			fmt.Println("err", err)
			return
		}
		f.Close()
		fmt.Println("ok")
	case "link":
		if err := os.Link(args[0], args[1]); err != nil {
			fmt.Println("err", err)
			return
		}
		fmt.Println("ok")
	case "rename":
		if err := os.Rename(args[0], args[1]); err != nil {
			fmt.Println("err", err)
			return
		}
		fmt.Println("ok")
	case "symlink":
		if err := os.Symlink(args[0], args[1]); err != nil {
			fmt.Println("err", err)
			return
		}
		fmt.Println("ok")
	case "env":
		env := os.Environ()
		sort.Strings(env)
		fmt.Println("ok", strings.Join(env, " "))
	case "args":
		fmt.Println("ok", strings.Join(os.Args, " "))
	case "membomb":
		var keep [][]byte
		for i := 0; ; i++ {
			b := make([]byte, 8<<20)
			for j := range b {
				b[j] = byte(j)
			}
			keep = append(keep, b)
			fmt.Println("allocated", (i+1)*8, "MiB")
		}
	case "loop":
		fmt.Println("looping")
		n := 0
		for {
			n++
		}
	case "tool":
		out, err := guest.Call(args[0], json.RawMessage(args[1]))
		if err != nil {
			fmt.Println("err", err)
			return
		}
		b, _ := json.Marshal(out)
		fmt.Println("ok", string(b))
	case "renumber":
		renumber(args)
	case "readdirbuf":
		readdirbuf(args)
	case "fds":
		// fds PATH TOOL: opens PATH, keeping every file open, until an open
		// fails, then calls TOOL: how far the module got, and whether the
		// host could still open a file of its own.
		var keep []*os.File
		var err error
		for len(keep) < 1<<20 {
			var f *os.File
			if f, err = os.Open(args[0]); err != nil {
				break
			}
			keep = append(keep, f)
		}
		fmt.Println("opened", len(keep), err)
		out, err := guest.Call(args[1], json.RawMessage(`{}`))
		if err != nil {
			fmt.Println("err", err)
			return
		}
		fmt.Println("tool", out.Content)
	case "longpath":
		// longpath DIR N: opens DIR/a/a/.../a, N components.
		var n int
		fmt.Sscan(args[1], &n)
		_, err := os.Open(args[0] + "/" + strings.Repeat("a/", n) + "x")
		fmt.Println("opened", err)
	case "sleep":
		// sleep D: one poll_oneoff of D, a host call the deadline must cut.
		d, err := time.ParseDuration(args[0])
		if err != nil {
			fmt.Println("err", err)
			os.Exit(2)
		}
		fmt.Println("sleeping")
		time.Sleep(d)
		fmt.Println("woke")
	case "fill":
		// fill DIR N SIZE D: writes N files of SIZE bytes in DIR (empty
		// ones for SIZE 0), going on past errors, then sleeps D.
		var n, size int
		fmt.Sscan(args[1], &n)
		fmt.Sscan(args[2], &size)
		d, err := time.ParseDuration(args[3])
		if err != nil {
			fmt.Println("err", err)
			os.Exit(2)
		}
		buf := make([]byte, size)
		failed := 0
		for i := 0; i < n; i++ {
			if os.WriteFile(fmt.Sprintf("%s/f%d", args[0], i), buf, 0o644) != nil {
				failed++
			}
		}
		fmt.Println("wrote", n-failed, "failed", failed)
		time.Sleep(d)
		fmt.Println("woke")
	case "stdin":
		// stdin: reads stdin to its end.
		b, err := io.ReadAll(os.Stdin)
		fmt.Println("read", len(b), err)
	case "exit":
		var n int
		fmt.Sscan(args[0], &n)
		os.Exit(n)
	default:
		fmt.Println("unknown", os.Args[1])
		os.Exit(2)
	}
}
