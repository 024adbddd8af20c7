package main

import (
	"flag"
	"fmt"
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
	var (
		samples []time.Duration
		fails   stats.Failures
	)
	for i := range *warmup + *rounds {
		d := stats.Burst(*n, &fails, func() error { _, err := runOnce(c.dir, argv); return err })
		if i >= *warmup {
			samples = append(samples, d)
		}
	}
	attempts := *n * (*warmup + *rounds)
	if fails.N() == attempts {
		return fmt.Errorf("every run failed, first: %w", fails.First())
	}
	l := stats.Summarise(samples)
	row := c.row(results.Latency)
	row.Latency, row.Timer = &l, "benchtool burst"
	row.SetFailures(fails.N(), attempts, fails.First())
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
	var fails stats.Failures
	r := stats.ClosedLoop(*workers, *dur, &fails, func() error { _, err := runOnce(c.dir, argv); return err })
	if r.Calls == 0 {
		return fmt.Errorf("no call succeeded, first failure: %w", fails.First())
	}
	row := c.row(results.Throughput)
	row.Rate = &r
	row.SetFailures(fails.N(), r.Calls+fails.N(), fails.First())
	return results.Append(c.out, row)
}
