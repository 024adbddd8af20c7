// Package bench measures airlock against direct execution and peer sandboxes
// in the same run, so every number comes with its ratio to the floor. The Go
// benchmarks here build the airlock binary once and time whole commands
// (`go test -bench . ./bench`); run.sh adds hyperfine and the peers.
package bench
