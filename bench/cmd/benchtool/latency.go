package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/airlockhq/airlock/bench/internal/results"
	"github.com/airlockhq/airlock/bench/internal/stats"
)

// cmdTime runs a command -n times one after another (after -warmup untimed
// runs) and records its latency.
func cmdTime(args []string) error {
	fs := flag.NewFlagSet("time", flag.ContinueOnError)
	var c cellFlags
	c.register(fs)
	n := fs.Int("n", 20, "timed runs")
	warmup := fs.Int("warmup", 2, "untimed runs first")
	argv, err := c.parse(fs, args, true)
	if err != nil {
		return err
	}
	for range *warmup {
		if _, err := runOnce(c.dir, argv); err != nil {
			return err
		}
	}
	samples := make([]time.Duration, 0, *n)
	for range *n {
		d, err := runOnce(c.dir, argv)
		if err != nil {
			return err
		}
		samples = append(samples, d)
	}
	l := stats.Summarise(samples)
	row := c.row(results.Latency)
	row.Latency, row.Timer = &l, "benchtool"
	return results.Append(c.out, row)
}

// hyperfineJSON is the part of `hyperfine --export-json` that is read.
type hyperfineJSON struct {
	Results []struct {
		Command string    `json:"command"`
		Times   []float64 `json:"times"`
	} `json:"results"`
}

// cmdHyperfine converts hyperfine's export of one command into a row.
func cmdHyperfine(args []string) error {
	fs := flag.NewFlagSet("hyperfine", flag.ContinueOnError)
	var c cellFlags
	c.register(fs)
	in := fs.String("json", "", "hyperfine --export-json file")
	version := fs.String("version", "hyperfine", "timer name for the row")
	if _, err := c.parse(fs, args, false); err != nil {
		return err
	}
	b, err := os.ReadFile(*in)
	if err != nil {
		return fmt.Errorf("reading hyperfine output: %w", err)
	}
	var h hyperfineJSON
	if err := json.Unmarshal(b, &h); err != nil {
		return fmt.Errorf("parsing %q: %w", *in, err)
	}
	if len(h.Results) != 1 || len(h.Results[0].Times) == 0 {
		return errors.New("hyperfine output has no times for one command")
	}
	var samples []time.Duration
	for _, s := range h.Results[0].Times {
		samples = append(samples, time.Duration(s*float64(time.Second)))
	}
	l := stats.Summarise(samples)
	row := c.row(results.Latency)
	row.Latency, row.Timer = &l, *version
	return results.Append(c.out, row)
}

// cmdSkip records a cell that could not be measured, with the reason.
func cmdSkip(args []string) error {
	fs := flag.NewFlagSet("skip", flag.ContinueOnError)
	var c cellFlags
	c.register(fs)
	section := fs.String("section", results.Latency, "latency, throughput or memory")
	reason := fs.String("reason", "", "why the cell has no numbers")
	if _, err := c.parse(fs, args, false); err != nil {
		return err
	}
	if *reason == "" {
		return errors.New("-reason is required")
	}
	row := c.row(*section)
	row.Skipped = *reason
	return results.Append(c.out, row)
}
