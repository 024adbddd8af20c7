// Command callbench times tool calls through ONE warm airlock session opened
// with the public Go API (airlock.Open, Session.Call), the way an agent
// embedding airlock calls tools; bench/run.sh runs it next to the CLI's cold
// calls. It appends one results.Row to the JSON-lines file named by -out.
//
//	callbench -mode latency -out F -dir D -workload W -tool T -args JSON [-n N] [-warmup K]
//	callbench -mode burst   -out F -dir D -workload W -tool T -args JSON [-c 50] [-rounds R]
//	callbench -mode rate    -out F -dir D -workload W -tool T -args JSON [-c C] [-d DUR]
//	callbench -mode mem     -out F -dir D [-inflight 16]
//	callbench -mode mcp     -out F -dir D -workload W -file F -server 'NAME=CMD ARGS' ... [-n N] [-pause DUR]
//
// The mcp mode reads -file through each -server (an MCP server on stdio,
// driven by the Go SDK's client) and spawns `cat` of it, interleaved call
// by call, and appends a row for each.
//
// The native backend starts this same binary as each sandbox's init, so main
// runs the hidden sandbox and runner modes first, as cmd/airlock does.
package main

import (
	"fmt"
	"os"

	"github.com/airlockhq/airlock"
)

func main() {
	airlock.Init() // plays the sandbox's init and the runner when started as them
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "callbench: %v\n", err)
		os.Exit(1)
	}
}
