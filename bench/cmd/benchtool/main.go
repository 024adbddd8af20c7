// Command benchtool is the bench harness's driver: bench/run.sh calls it to
// time commands (when hyperfine is absent), convert hyperfine's JSON, run
// bursts of concurrent commands, measure throughput and a sandbox's memory,
// record skipped cells, and write the report. Every measuring subcommand
// appends one results.Row to the JSON-lines file named by -out.
//
//	benchtool time      -out F -workload W -system S [-n N] [-warmup K] [-dir D] -- ARGV...
//	benchtool hyperfine -out F -workload W -system S -json HYPERFINE.json
//	benchtool burst     -out F -workload W -system S [-c 50] [-rounds R] [-dir D] -- ARGV...
//	benchtool rate      -out F -workload W -system S [-c C] [-d DUR] [-dir D] -- ARGV...
//	benchtool mem       -out F -system S [-leaf sleep] [-dir D] -- ARGV...
//	benchtool egress    -out F [-mib 256] [-rounds 5] [-listen ADDR] -sys 'NAME=CMD {url}'... [-note NAME=NOTE]...
//	benchtool phases    -exe AIRLOCK [-n 40]   (prints a table: the median of each cold setup step)
//	benchtool skip      -out F -section latency -workload W -system S -reason WHY
//	benchtool report    -cells F -json OUT.json -md OUT.md -systems 'a,b,...' [-meta K=V]...
package main

import (
	"fmt"
	"os"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: benchtool time|hyperfine|burst|rate|mem|egress|phases|skip|report [flags] [-- ARGV...]")
		os.Exit(2)
	}
	cmds := map[string]func([]string) error{
		"time": cmdTime, "hyperfine": cmdHyperfine, "burst": cmdBurst, "rate": cmdRate,
		"mem": cmdMem, "egress": cmdEgress, "phases": cmdPhases, "skip": cmdSkip, "report": cmdReport,
	}
	run, ok := cmds[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "benchtool: unknown subcommand %q\n", os.Args[1])
		os.Exit(2)
	}
	if err := run(os.Args[2:]); err != nil {
		fmt.Fprintf(os.Stderr, "benchtool %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}
