package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"strconv"
	"strings"

	"github.com/airlockhq/airlock/bench/internal/results"
	"github.com/airlockhq/airlock/bench/internal/stats"
)

// systemFlag collects repeated NAME=VALUE flags in order.
type systemFlag struct{ names, values []string }

func (s *systemFlag) String() string { return strings.Join(s.names, ",") }

func (s *systemFlag) Set(v string) error {
	name, value, ok := strings.Cut(v, "=")
	if !ok || name == "" || value == "" {
		return fmt.Errorf("%q: want NAME=VALUE", v)
	}
	s.names, s.values = append(s.names, name), append(s.values, value)
	return nil
}

func (s *systemFlag) get(name string) string {
	for i, n := range s.names {
		if n == name {
			return s.values[i]
		}
	}
	return ""
}

// cmdEgress serves one body of -mib MiB over HTTP on -listen and has every
// -sys command download it, -rounds times, the systems alternated within
// each round so that load on a shared machine falls on all of them alike.
// A command is a shell command line in which {url} is the body's address,
// and {relay} its address through a bare relay in this process (accept,
// dial, io.Copy both ways, which Linux splices): what relaying alone costs;
// it must print the bytes it received and its rate (bytes a second), as
// curl's -w '%{size_download} %{speed_download}' does: the client's own
// timer, so a sandbox's start is not counted against its network path.
// One egress row per system.
func cmdEgress(args []string) error {
	fs := flag.NewFlagSet("egress", flag.ContinueOnError)
	out := fs.String("out", "", "JSON-lines file to append the rows to")
	listen := fs.String("listen", "127.0.0.1:0", "address to serve the body on")
	mib := fs.Int64("mib", 256, "size of the body in MiB")
	rounds := fs.Int("rounds", 5, "downloads per system")
	dir := fs.String("dir", "", "working directory of the commands")
	var systems, notes systemFlag
	fs.Var(&systems, "sys", "NAME=SHELL-COMMAND with {url} (repeatable, in report order)")
	fs.Var(&notes, "note", "NAME=NOTE for a system's row (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" || len(systems.names) == 0 {
		return errors.New("-out and at least one -sys are required")
	}
	size := *mib << 20
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("serving the body: %w", err)
	}
	defer l.Close()
	go http.Serve(l, bodyHandler(size))
	url := "http://" + l.Addr().String() + "/body"
	relayURL := ""
	if strings.Contains(strings.Join(systems.values, " "), "{relay}") {
		rl, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("the reference relay: %w", err)
		}
		defer rl.Close()
		go relay(rl, l.Addr().String())
		relayURL = "http://" + rl.Addr().String() + "/body"
	}

	rates := make([][]float64, len(systems.names))
	fails := make([]stats.Failures, len(systems.names))
	for range *rounds {
		for i, cmdline := range systems.values {
			cmdline = strings.ReplaceAll(strings.ReplaceAll(cmdline, "{url}", url), "{relay}", relayURL)
			rate, err := download(*dir, cmdline, size)
			if err != nil {
				fails[i].Add(err)
				continue
			}
			rates[i] = append(rates[i], rate)
		}
	}
	for i, name := range systems.names {
		row := results.Row{Section: results.Egress, Workload: "download", System: name, Note: notes.get(name), Timer: "curl"}
		if len(rates[i]) == 0 {
			row.Note = ""
			row.Skipped = fmt.Sprintf("every download failed, first: %v", fails[i].First())
		} else {
			t := stats.SummariseTransfer(size, rates[i])
			row.Transfer = &t
			row.SetFailures(fails[i].N(), *rounds, fails[i].First())
		}
		if err := results.Append(*out, row); err != nil {
			return err
		}
	}
	return nil
}

// relay accepts connections on l and relays each to to, both ways, with
// io.Copy between the TCP connections (splice(2) on Linux), until l closes.
func relay(l net.Listener, to string) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			up, err := net.Dial("tcp", to)
			if err != nil {
				return
			}
			defer up.Close()
			go func() { io.Copy(up, c); up.(*net.TCPConn).CloseWrite() }()
			io.Copy(c, up)
		}()
	}
}

// bodyHandler serves size zero bytes at any path, in writes of 1 MiB.
func bodyHandler(size int64) http.Handler {
	chunk := make([]byte, 1<<20)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
		w.Header().Set("Content-Type", "application/octet-stream")
		for left := size; left > 0; {
			n, err := w.Write(chunk[:min(left, int64(len(chunk)))])
			if err != nil {
				return
			}
			left -= int64(n)
		}
	})
}

// download runs one command line and returns the rate it printed, after
// checking that it received the whole body.
func download(dir, cmdline string, size int64) (float64, error) {
	cmd := exec.Command("sh", "-c", cmdline)
	cmd.Dir = dir
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("%s: %w: %s", cmdline, err, tail(stderr.String()+stdout.String()))
	}
	got, rate, err := parseDownload(stdout.String())
	if err != nil {
		return 0, fmt.Errorf("%s: %w", cmdline, err)
	}
	if got != size {
		return 0, fmt.Errorf("%s: received %d bytes of %d", cmdline, got, size)
	}
	return rate, nil
}

// parseDownload reads "BYTES RATE" from the last line of a command's output.
func parseDownload(out string) (int64, float64, error) {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	f := strings.Fields(lines[len(lines)-1])
	if len(f) != 2 {
		return 0, 0, fmt.Errorf("output %q: want BYTES RATE on its last line", tail(out))
	}
	got, err1 := strconv.ParseInt(f[0], 10, 64)
	rate, err2 := strconv.ParseFloat(f[1], 64)
	if err1 != nil || err2 != nil || rate <= 0 {
		return 0, 0, fmt.Errorf("output %q: want BYTES RATE on its last line", tail(out))
	}
	return got, rate, nil
}
