package main

import (
	"errors"
	"flag"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/airlockhq/airlock/bench/internal/results"
)

// cellFlags are the flags every measuring subcommand takes.
type cellFlags struct {
	out, workload, system, dir, note string
}

func (c *cellFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.out, "out", "", "JSON-lines file to append the row to")
	fs.StringVar(&c.workload, "workload", "", "workload id")
	fs.StringVar(&c.system, "system", "", "system name")
	fs.StringVar(&c.dir, "dir", "", "working directory of the command")
	fs.StringVar(&c.note, "note", "", "note for the row")
}

// parse parses args and returns the command after "--".
func (c *cellFlags) parse(fs *flag.FlagSet, args []string, needArgv bool) ([]string, error) {
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if c.out == "" || c.system == "" {
		return nil, errors.New("-out and -system are required")
	}
	argv := fs.Args()
	if needArgv && len(argv) == 0 {
		return nil, errors.New("no command after --")
	}
	return argv, nil
}

func (c *cellFlags) row(section string) results.Row {
	return results.Row{Section: section, Workload: c.workload, System: c.system, Note: c.note}
}

// runOnce runs argv to completion in dir and returns how long it took.
func runOnce(dir string, argv []string) (time.Duration, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	var out strings.Builder
	cmd.Stdout = &out
	cmd.Stderr = &out
	start := time.Now()
	err := cmd.Run()
	d := time.Since(start)
	if err != nil {
		return d, fmt.Errorf("%q: %w: %s", argv, err, tail(out.String()))
	}
	return d, nil
}

func tail(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 400 {
		s = "..." + s[len(s)-400:]
	}
	return s
}
