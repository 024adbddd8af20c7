package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/airlockhq/airlock"
	"github.com/airlockhq/airlock/bench/internal/proctree"
	"github.com/airlockhq/airlock/bench/internal/results"
	"github.com/airlockhq/airlock/bench/internal/stats"
)

type config struct {
	mode, out, dir, records, system, workload, tool, args, note string
	n, warmup, conc, rounds, inflight                           int
	dur                                                         time.Duration
	file                                                        string
	pause                                                       time.Duration
	// client drives the mcp mode's servers: "go" (the Go SDK's client, in
	// this process) or "ts" (the TypeScript SDK's, in node: tsScript run
	// with the SDK package at tsSDK).
	client, tsScript, tsSDK string
}

// multi is a repeatable string flag.
type multi []string

func (m *multi) String() string     { return strings.Join(*m, ", ") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

func run(argv []string) error {
	var c config
	fs := flag.NewFlagSet("callbench", flag.ContinueOnError)
	fs.StringVar(&c.mode, "mode", "latency", "latency, burst, rate, mem or mcp")
	fs.StringVar(&c.out, "out", "", "JSON-lines file to append the row to")
	fs.StringVar(&c.dir, "dir", "", "directory granted read-write")
	fs.StringVar(&c.records, "records", "", "audit records directory (default: a temporary one)")
	fs.StringVar(&c.system, "system", "airlock session", "system name for the row")
	fs.StringVar(&c.workload, "workload", "read_file", "workload id")
	fs.StringVar(&c.tool, "tool", "read_file", "tool to call")
	fs.StringVar(&c.args, "args", `{"path":"data.txt"}`, "the tool's JSON arguments")
	fs.StringVar(&c.note, "note", "", "note for the row")
	fs.IntVar(&c.n, "n", 50, "timed calls (latency)")
	fs.IntVar(&c.warmup, "warmup", 3, "untimed calls or bursts first")
	fs.IntVar(&c.conc, "c", 1, "concurrent calls (burst: calls started at once; rate: workers)")
	fs.IntVar(&c.rounds, "rounds", 5, "bursts timed")
	fs.IntVar(&c.inflight, "inflight", 16, "calls in flight (mem)")
	fs.DurationVar(&c.dur, "d", 5*time.Second, "how long to run (rate)")
	fs.StringVar(&c.file, "file", "", "file to read, relative to -dir (mcp)")
	fs.DurationVar(&c.pause, "pause", 0, "idle pause before each call (mcp)")
	fs.StringVar(&c.client, "client", "go", "MCP client of the mcp mode: go (the Go SDK's) or ts (the TypeScript SDK's, run by node)")
	fs.StringVar(&c.tsScript, "ts-script", "", "the TypeScript client's driver, bench/tsclient/mcp_read.mjs (-client ts)")
	fs.StringVar(&c.tsSDK, "ts-sdk", "", "`DIR` of the @modelcontextprotocol/sdk package (-client ts)")
	var servers multi
	fs.Var(&servers, "server", "`NAME=COMMAND ARGS` of an MCP server to time (mcp; repeatable)")
	if err := fs.Parse(argv); err != nil {
		return err
	}
	if c.mode == "mcp" {
		if c.out == "" || c.dir == "" {
			return errors.New("-out and -dir are required")
		}
		return mcpLatency(&c, servers)
	}
	if c.out == "" || c.dir == "" {
		return errors.New("-out and -dir are required")
	}
	if !json.Valid([]byte(c.args)) {
		return fmt.Errorf("-args %q is not JSON", c.args)
	}
	if c.records == "" {
		tmp, err := os.MkdirTemp("", "callbench-records")
		if err != nil {
			return fmt.Errorf("making a records directory: %w", err)
		}
		defer os.RemoveAll(tmp)
		c.records = tmp
	}
	// Admission control must not be what is measured: every call of a burst
	// or of the memory probe runs at once.
	maxConc := max(c.conc, c.inflight, airlockDefaultConcurrent)
	s, err := airlock.Open(&airlock.Options{Dir: c.dir, RecordsDir: c.records, MaxConcurrent: maxConc, MaxQueue: 64, Pool: 2})
	if err != nil {
		return fmt.Errorf("opening a session: %w", err)
	}
	defer s.Close()
	row := results.Row{Workload: c.workload, System: c.system, Note: c.note}
	switch c.mode {
	case "latency":
		row.Section, row.Timer = results.Latency, "callbench"
		l, err := latency(s, &c)
		if err != nil {
			return err
		}
		row.Latency = &l
	case "burst":
		row.Section, row.Timer = results.Latency, "callbench burst"
		var fails stats.Failures
		l := bursts(s, &c, &fails)
		attempts := c.conc * (c.warmup + c.rounds)
		if fails.N() == attempts {
			return fmt.Errorf("every call failed, first: %w", fails.First())
		}
		row.Latency = &l
		row.SetFailures(fails.N(), attempts, fails.First())
	case "rate":
		row.Section = results.Throughput
		if err := call(s, &c); err != nil {
			return err
		}
		var fails stats.Failures
		r := stats.ClosedLoop(c.conc, c.dur, &fails, func() error { return call(s, &c) })
		if r.Calls == 0 {
			return fmt.Errorf("no call succeeded, first failure: %w", fails.First())
		}
		row.Rate = &r
		row.SetFailures(fails.N(), r.Calls+fails.N(), fails.First())
	case "mem":
		row.Section = results.MemorySec
		m, err := memory(s, &c)
		if err != nil {
			return err
		}
		row.Memory = m
	default:
		return fmt.Errorf("unknown -mode %q", c.mode)
	}
	return results.Append(c.out, row)
}

// airlockDefaultConcurrent is the session's default MaxConcurrent.
const airlockDefaultConcurrent = 8

// call makes one call and fails unless it completed without an error.
func call(s *airlock.Session, c *config) error {
	res, err := s.Call(context.Background(), c.tool, c.args)
	if err != nil {
		return fmt.Errorf("%s: %w", c.tool, err)
	}
	if res.IsError {
		return fmt.Errorf("%s %s: %s: %s", c.tool, c.args, res.Class, res.Text)
	}
	return nil
}

func latency(s *airlock.Session, c *config) (stats.Latency, error) {
	for range c.warmup {
		if err := call(s, c); err != nil {
			return stats.Latency{}, err
		}
	}
	samples := make([]time.Duration, 0, c.n)
	for range c.n {
		start := time.Now()
		if err := call(s, c); err != nil {
			return stats.Latency{}, err
		}
		samples = append(samples, time.Since(start))
	}
	return stats.Summarise(samples), nil
}

func bursts(s *airlock.Session, c *config, fails *stats.Failures) stats.Latency {
	var samples []time.Duration
	for i := range c.warmup + c.rounds {
		d := stats.Burst(c.conc, fails, func() error { return call(s, c) })
		if i >= c.warmup {
			samples = append(samples, d)
		}
	}
	return stats.Summarise(samples)
}

// memory reads the broker's RSS idle (after a warm-up call), then with
// c.inflight shell calls sleeping at once, and the memory of the sandboxes'
// processes (everything this process started but the sleeps themselves).
func memory(s *airlock.Session, c *config) (*results.Memory, error) {
	warm := *c
	warm.tool, warm.args = "read_file", `{"path":"data.txt"}`
	if err := call(s, &warm); err != nil {
		return nil, err
	}
	// Give a warm pool time to refill before the idle session is read.
	time.Sleep(time.Second)
	idle, _, err := proctree.SelfKiB()
	if err != nil {
		return nil, err
	}
	idleTree, err := proctree.Tree(os.Getpid())
	if err != nil {
		return nil, err
	}
	_, idlePSS := proctree.Sum(idleTree[1:])
	sleeper := *c
	sleeper.tool, sleeper.args = "shell", `{"command":"sleep 3"}`
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for range c.inflight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := call(s, &sleeper); err != nil {
				mu.Lock()
				first = errors.Join(first, err)
				mu.Unlock()
			}
		}()
	}
	m := &results.Memory{BrokerIdleRSSKiB: idle, InFlight: c.inflight, IdleProcs: len(idleTree) - 1, IdlePSSKiB: idlePSS}
	var sampled bool
	for deadline := time.Now().Add(2500 * time.Millisecond); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		procs, err := proctree.Tree(os.Getpid())
		if err != nil {
			return nil, err
		}
		sleeps := 0
		for _, p := range procs {
			if p.Comm == "sleep" {
				sleeps++
			}
		}
		if sleeps < c.inflight {
			continue
		}
		time.Sleep(100 * time.Millisecond)
		if procs, err = proctree.Tree(os.Getpid()); err != nil {
			return nil, err
		}
		m.BrokerBusyRSSKiB = procs[0].RSSKiB
		for _, p := range procs[1:] {
			if p.Comm != "sleep" {
				m.HelpersRSSKiB += p.RSSKiB
				m.HelpersPSSKiB += p.PSSKiB
				m.Procs = append(m.Procs, p)
			}
		}
		sampled = true
		break
	}
	wg.Wait()
	if first != nil {
		return nil, first
	}
	if !sampled {
		return nil, fmt.Errorf("never saw %d sleeps in flight at once", c.inflight)
	}
	_, m.BrokerPeakRSSKiB, err = proctree.SelfKiB()
	if err != nil {
		return nil, err
	}
	m.PerSandboxPSSKiB = m.HelpersPSSKiB / c.inflight
	return m, nil
}
