package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/airlockhq/airlock/bench/internal/results"
	"github.com/airlockhq/airlock/bench/internal/stats"
)

// mcpServer is one MCP server the mcp mode drives: a command that speaks
// MCP on stdio, and the read_file-like tool it calls.
type mcpServer struct {
	system string
	argv   []string
	tool   string
	args   map[string]any
	note   string
	cs     *mcp.ClientSession
}

// mcpLatency is the mcp mode: sequential reads of one file through real MCP
// clients (the Go SDK's, over stdio) of `airlock mcp` and of the peer
// servers named by -server, and spawns of `cat` of the same file from this
// same process, interleaved call by call so that the machine's load falls
// on every system alike. The order turns by one each round: a call right
// after another server's shares the machine with that server's work after
// its answer (airlock's refill of its warm pool), so no system may always
// come first or always follow the same one. With -pause every call comes
// after that long idle, as an agent's calls come between its model's
// turns. It appends one row per system.
func mcpLatency(c *config, servers []string) error {
	if c.file == "" {
		return errors.New("-file is required with -mode mcp")
	}
	abs := filepath.Join(c.dir, c.file)
	want, err := os.ReadFile(abs)
	if err != nil {
		return fmt.Errorf("reading the file to serve: %w", err)
	}
	clientSamples, timer, client := goClientSamples, "callbench mcp", "Go SDK client"
	switch c.client {
	case "go":
	case "ts":
		clientSamples, timer, client = tsClientSamples, "callbench mcp, TypeScript SDK client", "TypeScript SDK client (node)"
	default:
		return fmt.Errorf("-client %q: want go or ts", c.client)
	}
	var list []*mcpServer
	for _, s := range servers {
		name, argv, ok := strings.Cut(s, "=")
		if !ok {
			return fmt.Errorf("-server %q: want NAME=COMMAND [ARGS...]", s)
		}
		srv := &mcpServer{system: name, argv: strings.Fields(argv), tool: "read_file", args: map[string]any{"path": c.file}}
		switch {
		case strings.Contains(name, "server-filesystem"):
			// The reference server reads paths relative to its working
			// directory too, but names the tool read_text_file.
			srv.tool, srv.args = "read_text_file", map[string]any{"path": abs}
			srv.note = "reference MCP filesystem server (node), no sandbox"
		case strings.Contains(name, "mcpfloor"):
			srv.note = "the Go SDK's server reading the file in-process, no sandbox: what the MCP round trip alone costs"
		default:
			srv.note = "warm: one `airlock mcp` session, " + client + " over stdio"
		}
		list = append(list, srv)
	}
	samples, err := clientSamples(c, list, abs, want)
	if err != nil {
		return err
	}
	rows := []results.Row{{Section: results.Latency, Workload: c.workload, System: results.Floor, Timer: timer,
		Note: "cat of the file, spawned by the MCP client's own process", Latency: ptr(stats.Summarise(samples[0]))}}
	for j, s := range list {
		rows = append(rows, results.Row{Section: results.Latency, Workload: c.workload, System: s.system, Timer: timer,
			Note: s.note, Latency: ptr(stats.Summarise(samples[j+1]))})
	}
	for _, r := range rows {
		if err := results.Append(c.out, r); err != nil {
			return err
		}
	}
	return nil
}

// goClientSamples times the servers of list through the Go SDK's client
// in this process, and cat spawned from it: samples[0] are cat's,
// samples[j+1] list[j]'s.
func goClientSamples(c *config, list []*mcpServer, abs string, want []byte) ([][]time.Duration, error) {
	ctx := context.Background()
	for _, s := range list {
		cmd := exec.Command(s.argv[0], s.argv[1:]...)
		cmd.Dir, cmd.Stderr = c.dir, os.Stderr
		cl := mcp.NewClient(&mcp.Implementation{Name: "callbench", Version: "1"}, nil)
		cs, err := cl.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			return nil, fmt.Errorf("%s: connecting: %w", s.system, err)
		}
		defer cs.Close()
		s.cs = cs
	}
	read := func(s *mcpServer) error {
		res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: s.tool, Arguments: s.args})
		if err != nil {
			return fmt.Errorf("%s: %w", s.system, err)
		}
		if res.IsError || len(res.Content) == 0 {
			b, _ := json.Marshal(res)
			return fmt.Errorf("%s: the call failed: %s", s.system, b)
		}
		if t, ok := res.Content[0].(*mcp.TextContent); !ok || !strings.Contains(t.Text, string(want[:64])) {
			return fmt.Errorf("%s: the answer lacks the file's text", s.system)
		}
		return nil
	}
	spawn := func() error {
		out, err := exec.Command("cat", abs).Output()
		if err == nil && len(out) != len(want) {
			err = fmt.Errorf("cat read %d bytes, want %d", len(out), len(want))
		}
		return err
	}
	samples := make([][]time.Duration, len(list)+1)
	for i := range c.warmup + c.n {
		for k := 0; k <= len(list); k++ {
			j := (i + k) % (len(list) + 1)
			// Between an agent's calls there is the model's turn; -pause
			// stands for it, before every call of every system (zero:
			// back to back).
			time.Sleep(c.pause)
			start := time.Now()
			var err error
			if j == 0 {
				err = spawn()
			} else {
				err = read(list[j-1])
			}
			d := time.Since(start)
			if err != nil {
				return nil, err
			}
			if i >= c.warmup {
				samples[j] = append(samples[j], d)
			}
		}
	}
	return samples, nil
}

// tsClientSamples times the servers of list as goClientSamples does,
// through the TypeScript SDK's client: c.tsScript run by node, which
// spawns cat too.
func tsClientSamples(c *config, list []*mcpServer, abs string, want []byte) ([][]time.Duration, error) {
	if c.tsScript == "" || c.tsSDK == "" {
		return nil, errors.New("-client ts needs -ts-script and -ts-sdk")
	}
	type server struct {
		System string         `json:"system"`
		Argv   []string       `json:"argv"`
		Tool   string         `json:"tool"`
		Args   map[string]any `json:"args"`
	}
	spec := struct {
		SDK     string   `json:"sdk"`
		Dir     string   `json:"dir"`
		File    string   `json:"file"`
		Want    string   `json:"want"`
		N       int      `json:"n"`
		Warmup  int      `json:"warmup"`
		PauseMs int64    `json:"pause_ms"`
		Servers []server `json:"servers"`
	}{SDK: c.tsSDK, Dir: c.dir, File: abs, Want: string(want[:min(64, len(want))]), N: c.n, Warmup: c.warmup, PauseMs: c.pause.Milliseconds()}
	for _, s := range list {
		spec.Servers = append(spec.Servers, server{System: s.system, Argv: s.argv, Tool: s.tool, Args: s.args})
	}
	f, err := os.CreateTemp("", "callbench-ts-*.json")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	if err := json.NewEncoder(f).Encode(spec); err != nil {
		f.Close()
		return nil, fmt.Errorf("writing the TypeScript client's spec: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	cmd := exec.Command("node", c.tsScript, f.Name())
	cmd.Dir, cmd.Stderr = c.dir, os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("the TypeScript client (node %s): %w", c.tsScript, err)
	}
	var got struct {
		SamplesMs [][]float64 `json:"samples_ms"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		return nil, fmt.Errorf("the TypeScript client's answer %.200q: %w", out, err)
	}
	if len(got.SamplesMs) != len(list)+1 {
		return nil, fmt.Errorf("the TypeScript client timed %d systems, want %d", len(got.SamplesMs), len(list)+1)
	}
	samples := make([][]time.Duration, len(got.SamplesMs))
	for j, ms := range got.SamplesMs {
		if len(ms) != c.n {
			return nil, fmt.Errorf("the TypeScript client timed %d calls of system %d, want %d", len(ms), j, c.n)
		}
		for _, m := range ms {
			samples[j] = append(samples[j], time.Duration(m*float64(time.Millisecond)))
		}
	}
	return samples, nil
}

func ptr[T any](v T) *T { return &v }
