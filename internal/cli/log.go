package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/printable"
)

func logCommand() *command {
	c := &command{
		name:    "log",
		summary: "show the audit log: every call, its decision and outcome",
		usage: `airlock log [--session ID] [--follow] [--json] [--records DIR]

Shows the audit records of every session (or one), oldest first. --follow
keeps printing records as they are written.`,
	}
	c.run = func(ctx context.Context, env *Env, args []string) int {
		fs := newFlags(c, env)
		session := fs.String("session", "", "show only session `ID`")
		follow := fs.Bool("follow", false, "keep printing new records")
		asJSON := fs.Bool("json", false, "print records as JSON lines")
		records := fs.String("records", "", "records `DIR` (default $AIRLOCK_STATE_DIR or ~/.local/state/airlock)")
		if code := parseFlags(c, env, fs, args); code >= 0 {
			return code
		}
		if fs.NArg() != 0 {
			return usageError(env, c, "unexpected argument %q", fs.Arg(0))
		}
		dir, err := recordsDir(env, *records)
		if err != nil {
			fmt.Fprintf(env.Stderr, "airlock log: %v\n", err)
			return exitFailure
		}
		if *session != "" && strings.ContainsAny(*session, `/\`) {
			fmt.Fprintf(env.Stderr, "airlock log: --session %q is not a session id\n", *session)
			return exitUsage
		}
		p := &logPrinter{w: env.Stdout, errw: env.Stderr, json: *asJSON, offsets: map[string]int64{}, lines: map[string]int{}}
		if err := p.scan(dir, *session); err != nil {
			fmt.Fprintf(env.Stderr, "airlock log: %v\n", err)
			return exitFailure
		}
		p.flush()
		if !*follow {
			// A last line with no newline is torn: its writer died
			// mid-write (a follower waits, it may still be finished).
			p.torn()
			return exitOK
		}
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return exitOK
			case <-tick.C:
				if err := p.scan(dir, *session); err != nil {
					fmt.Fprintf(env.Stderr, "airlock log: %v\n", err)
					return exitFailure
				}
				p.flush()
			}
		}
	}
	return c
}

// logPrinter prints records from every audit file, remembering how far it
// has read each so --follow prints only new ones.
type logPrinter struct {
	w, errw io.Writer
	json    bool
	offsets map[string]int64 // bytes read of each file (whole lines)
	lines   map[string]int   // lines read of each file
	tails   map[string]int   // files whose last line has no newline yet: its line number
	pending []audit.Record
}

func (p *logPrinter) scan(root, session string) error {
	pattern := filepath.Join(root, "*", audit.FileName)
	if session != "" {
		pattern = filepath.Join(root, session, audit.FileName)
	}
	files, err := filepath.Glob(pattern)
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := p.read(f); err != nil {
			return err
		}
	}
	return nil
}

func (p *logPrinter) read(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("opening %s: %w", path, err)
	}
	defer f.Close()
	off := p.offsets[path]
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return err
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	// Only whole lines: a record being written is read next time.
	end := strings.LastIndexByte(string(data), '\n') + 1
	if p.tails == nil {
		p.tails = map[string]int{}
	}
	delete(p.tails, path)
	if end < len(data) {
		p.tails[path] = p.lines[path] + strings.Count(string(data[:end]), "\n") + 1
	}
	if end == 0 {
		return nil
	}
	first := p.lines[path] + 1
	p.offsets[path] = off + int64(end)
	p.lines[path] += strings.Count(string(data[:end]), "\n")
	// A line that is not a record is named (file and line) and skipped;
	// everything readable is shown.
	return audit.Decode(strings.NewReader(string(data[:end])), first, func(r audit.Record) error {
		p.pending = append(p.pending, r)
		return nil
	}, func(line int, torn bool, err error) {
		fmt.Fprintf(p.errw, "airlock log: %s\n", audit.Problem{File: path, Line: line, Torn: torn, Err: err})
	})
}

// torn names every file whose last line is cut short.
func (p *logPrinter) torn() {
	for _, path := range slices.Sorted(maps.Keys(p.tails)) {
		fmt.Fprintf(p.errw, "airlock log: %s\n", audit.Problem{File: path, Line: p.tails[path], Torn: true})
	}
}

func (p *logPrinter) flush() {
	recs := p.pending
	p.pending = nil
	sortRecords(recs)
	if p.json {
		for _, r := range recs {
			b, _ := json.Marshal(r)
			fmt.Fprintf(p.w, "%s\n", b)
		}
		return
	}
	tw := tabwriter.NewWriter(p.w, 0, 4, 2, ' ', 0)
	for _, r := range recs {
		fmt.Fprintln(tw, formatRecord(r))
	}
	tw.Flush()
}

func sortRecords(recs []audit.Record) {
	slices.SortStableFunc(recs, func(a, b audit.Record) int { return a.Time.Compare(b.Time) })
}

// formatRecord renders one record as a tab-separated line. Every field is
// made printable on one line: a record holds text the model or a sandbox
// chose (paths, commands, host names, refusal reasons), and a person reads
// this.
func formatRecord(r audit.Record) string {
	ts := r.Time.Local().Format("2006-01-02 15:04:05.000")
	switch r.Kind {
	case audit.KindSession:
		return row(ts, r.Session, "session "+r.Decision, r.Backend, r.Rule)
	case audit.KindEgress:
		verdict := "allowed"
		if r.Decision != "" {
			verdict = r.Decision
		}
		return row(ts, r.Session, "egress", fmt.Sprintf("%s:%d → %s", r.Host, r.Port, r.Addr), verdict+" "+r.Rule)
	case audit.KindBackgroundStart, audit.KindBackgroundEnd:
		return row(ts, r.Session, string(r.Kind), r.WorkID, r.Class+" "+r.Detail)
	}
	outcome := r.Class
	if r.Decision == "refused" {
		outcome = "REFUSED: " + r.Reason
	}
	if len(r.LimitsHit) > 0 {
		outcome += " (hit: " + strings.Join(r.LimitsHit, ", ") + ")"
	}
	if len(r.Unenforced) > 0 {
		outcome += " (NOT ENFORCED: " + strings.Join(r.Unenforced, ", ") + ")"
	}
	args := string(r.Args)
	if len(args) > 80 {
		cut := 77
		for cut > 0 && !utf8.RuneStart(args[cut]) {
			cut--
		}
		args = args[:cut] + "..."
	}
	return row(ts, r.Session, r.CallID, r.Tool, outcome, fmt.Sprintf("%.1fms", r.Duration), args)
}

// row joins cells with tabs, each made printable on one line.
func row(cells ...string) string {
	for i, c := range cells {
		cells[i] = printable.Line(c)
	}
	return strings.Join(cells, "\t")
}
