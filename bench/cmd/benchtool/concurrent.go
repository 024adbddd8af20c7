package main

import (
	"flag"
	"time"

	"github.com/airlockhq/airlock/bench/internal/results"
	"github.com/airlockhq/airlock/bench/internal/stats"
)

// cmdBurst starts -c copies of a command at once, waits for all of them, and
// records the time until the last one finished; -rounds times.
func cmdBurst(args []string) error {
	fs := flag.NewFlagSet("burst", flag.ContinueOnError)
	var c cellFlags
	c.register(fs)
	n := fs.Int("c", 50, "commands started at once")
	rounds := fs.Int("rounds", 5, "bursts timed")
	warmup := fs.Int("warmup", 1, "untimed bursts first")
	argv, err := c.parse(fs, args, true)
	if err != nil {
		return err
	}
	var samples []time.Duration
	for i := range *warmup + *rounds {
		d, err := stats.Burst(*n, func() error { _, err := runOnce(c.dir, argv); return err })
		if err != nil {
			return err
		}
		if i >= *warmup {
			samples = append(samples, d)
		}
	}
	l := stats.Summarise(samples)
	row := c.row(results.Latency)
	row.Latency, row.Timer = &l, "benchtool burst"
	return results.Append(c.out, row)
}

// cmdRate runs -c workers in a closed loop for -d and records calls/s.
func cmdRate(args []string) error {
	fs := flag.NewFlagSet("rate", flag.ContinueOnError)
	var c cellFlags
	c.register(fs)
	workers := fs.Int("c", 1, "concurrent workers")
	dur := fs.Duration("d", 5*time.Second, "how long to run")
	argv, err := c.parse(fs, args, true)
	if err != nil {
		return err
	}
	r, err := stats.ClosedLoop(*workers, *dur, func() error { _, err := runOnce(c.dir, argv); return err })
	if err != nil {
		return err
	}
	row := c.row(results.Throughput)
	row.Rate = &r
	return results.Append(c.out, row)
}
