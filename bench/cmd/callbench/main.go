// Command callbench times tool calls through ONE warm airlock session opened
// with the public Go API (airlock.Open, Session.Call), the way an agent
// embedding airlock calls tools; bench/run.sh runs it next to the CLI's cold
// calls. It appends one results.Row to the JSON-lines file named by -out.
//
//	callbench -mode latency -out F -dir D -workload W -tool T -args JSON [-n N] [-warmup K]
//	callbench -mode burst   -out F -dir D -workload W -tool T -args JSON [-c 50] [-rounds R]
//	callbench -mode rate    -out F -dir D -workload W -tool T -args JSON [-c C] [-d DUR]
//	callbench -mode mem     -out F -dir D [-inflight 16]
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
