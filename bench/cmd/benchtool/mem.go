package main

import (
	"flag"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/airlockhq/airlock/bench/internal/proctree"
	"github.com/airlockhq/airlock/bench/internal/results"
)

// cmdMem starts a command whose workload is a -leaf process (sleep), waits
// until the leaf runs, and records the memory of every other process in the
// tree: the launcher (the process started) and the helpers between it and
// the leaf (sandbox init, runner, proxies, shells). The command then runs to
// its end.
func cmdMem(args []string) error {
	fs := flag.NewFlagSet("mem", flag.ContinueOnError)
	var c cellFlags
	c.register(fs)
	leaf := fs.String("leaf", "sleep", "command name of the workload process, left out of the sums")
	argv, err := c.parse(fs, args, true)
	if err != nil {
		return err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = c.dir
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %q: %w", argv, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var procs []proctree.Proc
	for {
		select {
		case err := <-done:
			return fmt.Errorf("%q ended before its %s ran (%w): %s", argv, *leaf, err, tail(out.String()))
		case <-time.After(20 * time.Millisecond):
		}
		procs, err = proctree.Tree(cmd.Process.Pid)
		if err != nil {
			continue
		}
		if hasLeaf(procs, *leaf) {
			// Let the sandbox settle (a launcher may still be finishing
			// its setup) before it is read.
			time.Sleep(200 * time.Millisecond)
			if procs, err = proctree.Tree(cmd.Process.Pid); err == nil && hasLeaf(procs, *leaf) {
				break
			}
		}
	}
	m := &results.Memory{}
	var kept []proctree.Proc
	for i, p := range procs {
		if p.Comm != *leaf {
			m.UnsharedKiB += p.UnsharedKiB
		}
		switch {
		case i == 0:
			m.LauncherRSSKiB, m.LauncherPSSKiB = p.RSSKiB, p.PSSKiB
		case p.Comm == *leaf:
			continue
		default:
			m.HelpersRSSKiB += p.RSSKiB
			m.HelpersPSSKiB += p.PSSKiB
		}
		kept = append(kept, p)
	}
	m.Procs = kept
	if err := <-done; err != nil {
		return fmt.Errorf("%q: %w: %s", argv, err, tail(out.String()))
	}
	row := c.row(results.MemorySec)
	row.Memory = m
	if row.Note == "" {
		var names []string
		for _, p := range kept {
			names = append(names, p.Comm)
		}
		row.Note = "processes: " + strings.Join(names, ", ")
	}
	return results.Append(c.out, row)
}

func hasLeaf(procs []proctree.Proc, leaf string) bool {
	for _, p := range procs[min(1, len(procs)):] {
		if p.Comm == leaf {
			return true
		}
	}
	return false
}
