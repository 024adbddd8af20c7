package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/airlockhq/airlock/grant"
	"github.com/airlockhq/airlock/internal/audit"
	"github.com/airlockhq/airlock/internal/printable"
	"github.com/airlockhq/airlock/internal/regularfile"
	"github.com/airlockhq/airlock/wire"
)

func logCommand() *command {
	c := &command{
		name:    "log",
		summary: "show the audit log: every call, its decision and outcome",
		usage: `airlock log [--session ID] [--since WHEN] [--tail N] [--follow] [--json] [--records DIR]

Shows the audit records of every session (or one), oldest first, one row per
call: when, session, call id, tool, how long it took, the outcome (a
refusal with its reason, the limits hit) and its arguments: runs of 16
blanks or more, or of one character, shown as a count ("…[4100 blanks]…"),
and a long one shown by its start and its end. A record keeps a string
argument of up to 4 KiB as it was sent; a longer one (a file's content, a
padded command) is kept so abridged, its middle cut if still long, and the
record then holds the length and the SHA-256 of the whole arguments, secrets
redacted (shown in the row, in full with --json). Egress
decisions (with the proxy's reason for a refusal, such as "not a public
address"), background work and the opening and closing of sessions have a
row each. --since keeps records from a time on ("10m" for the last ten
minutes, or "2026-01-02 15:04"), --tail N only the last N; --follow keeps
printing records as they are written. Every field is shown printable:
control characters and invisible format characters as escapes. A line of a
records file that is not a record is named on stderr (file:line) and
everything readable is shown. Exit status 1 when the records directory or
the session does not exist.`,
	}
	c.run = func(ctx context.Context, env *Env, args []string) int {
		fs := newFlags(c, env)
		session := fs.String("session", "", "show only session `ID`")
		follow := fs.Bool("follow", false, "keep printing new records")
		asJSON := fs.Bool("json", false, "print records as JSON lines")
		records := fs.String("records", "", "records `DIR` (default $AIRLOCK_STATE_DIR, else $XDG_STATE_HOME/airlock/sessions, else ~/.local/state/airlock/sessions)")
		since := fs.String("since", "", "show records from `WHEN` on: a duration back from now (10m, 2h) or a time (2026-01-02 15:04[:05], RFC 3339)")
		tail := fs.Int("tail", 0, "show only the last `N` records (then follow, with --follow)")
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
		if *tail < 0 {
			return usageError(env, c, "--tail %d: must be positive", *tail)
		}
		var from time.Time
		if *since != "" {
			t, err := parseSince(*since, time.Now())
			if err != nil {
				return usageError(env, c, "--since %q: %v", *since, err)
			}
			from = t
		}
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			fmt.Fprintf(env.Stderr, "airlock log: the records directory %s does not exist (no call has been recorded there; --records or $AIRLOCK_STATE_DIR names another)\n", dir)
			return exitFailure
		}
		if *session != "" {
			if _, err := os.Stat(filepath.Join(dir, *session, audit.FileName)); err != nil {
				fmt.Fprintf(env.Stderr, "airlock log: no session %q in %s (airlock log lists the sessions there)\n", *session, dir)
				return exitFailure
			}
		}
		p := &logPrinter{w: env.Stdout, errw: env.Stderr, json: *asJSON, offsets: map[string]int64{}, lines: map[string]int{}, since: from, tail: *tail}
		if err := p.scan(dir, *session); err != nil {
			fmt.Fprintf(env.Stderr, "airlock log: %v\n", err)
			return exitFailure
		}
		p.flush()
		p.tail = 0 // --tail applies to what is there now
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
	// seen is each file as last read: one cut back or replaced since is
	// read from its start.
	seen map[string]os.FileInfo
	// unreadable are the files named as unreadable (once each).
	unreadable map[string]bool
	pending    []audit.Record
	since      time.Time // records before it are left out
	tail       int       // when positive, only the last tail records of a flush
	header     bool      // the header row was printed
	// totals sums the cost of each session's calls, shown when it closes.
	totals map[string]*wire.Cost
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
	f, err := regularfile.Open(path, false)
	if err != nil {
		// A file that went away is a session being removed; one that is
		// not a regular file (a FIFO would wait for a writer for ever) or
		// cannot be opened is named, once, and the rest are shown.
		if !errors.Is(err, fs.ErrNotExist) && !p.unreadable[path] {
			if p.unreadable == nil {
				p.unreadable = map[string]bool{}
			}
			p.unreadable[path] = true
			fmt.Fprintf(p.errw, "airlock log: skipping %s: %v\n", path, err)
		}
		return nil
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	off := p.offsets[path]
	if prev, ok := p.seen[path]; ok && (!os.SameFile(prev, st) || st.Size() < off) {
		// Cut back (logrotate's copytruncate) or replaced by another file
		// (its session's directory removed, the id opened again): the
		// offset is of a file that is no more. Its new records are read
		// from its start, not ignored until the file outgrows the old
		// offset and then read from the middle of a line; and records a
		// reader saw go is said.
		fmt.Fprintf(p.errw, "airlock log: %s was cut back or replaced, the records read from it before are no longer there; reading it from its start\n", path)
		off, p.offsets[path], p.lines[path] = 0, 0, 0
	}
	if p.seen == nil {
		p.seen = map[string]os.FileInfo{}
	}
	p.seen[path] = st
	if st.Size() <= off {
		return nil
	}
	// Only whole lines: a record being written is read next time. The
	// file is read as it is decoded, never held whole.
	end, err := lastLineEnd(f, off, st.Size())
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	if p.tails == nil {
		p.tails = map[string]int{}
	}
	delete(p.tails, path)
	first := p.lines[path] + 1
	lines := &lineCounter{r: io.NewSectionReader(f, off, end-off)}
	// A line that is not a record is named (file and line) and skipped;
	// everything readable is shown.
	err = audit.Decode(lines, first, func(r audit.Record) error {
		p.pending = append(p.pending, r)
		p.trim()
		return nil
	}, func(line int, torn bool, err error) {
		fmt.Fprintf(p.errw, "airlock log: %s\n", audit.Problem{File: path, Line: line, Torn: torn, Err: err})
	})
	if err != nil {
		return fmt.Errorf("reading %s: %w", path, err)
	}
	p.offsets[path] = end
	p.lines[path] += lines.n
	if end < st.Size() {
		p.tails[path] = p.lines[path] + 1
	}
	return nil
}

// trim keeps, with --tail N, only about the last N records read so far:
// the last N of everything are among the last N of any part of it (and
// --since only drops the oldest), so a long history is never held whole.
func (p *logPrinter) trim() {
	if p.tail <= 0 || len(p.pending) < 2*p.tail+1024 {
		return
	}
	sortRecords(p.pending)
	p.pending = slices.Delete(p.pending, 0, len(p.pending)-p.tail)
}

// lastLineEnd returns the offset just past the last newline of f between
// off and size, or off when there is none, reading back from size a block
// at a time.
func lastLineEnd(f io.ReaderAt, off, size int64) (int64, error) {
	buf := make([]byte, 64<<10)
	for hi := size; hi > off; {
		lo := max(off, hi-int64(len(buf)))
		b := buf[:hi-lo]
		if _, err := f.ReadAt(b, lo); err != nil && !errors.Is(err, io.EOF) {
			return 0, err
		}
		if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
			return lo + int64(i) + 1, nil
		}
		hi = lo
	}
	return off, nil
}

// lineCounter counts the newlines read through it.
type lineCounter struct {
	r io.Reader
	n int
}

func (c *lineCounter) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.n += bytes.Count(b[:n], []byte{'\n'})
	return n, err
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
	if !p.since.IsZero() {
		recs = slices.DeleteFunc(recs, func(r audit.Record) bool { return r.Time.Before(p.since) })
	}
	if p.tail > 0 && len(recs) > p.tail {
		recs = recs[len(recs)-p.tail:]
	}
	if p.json {
		for _, r := range recs {
			b, _ := json.Marshal(r)
			fmt.Fprintf(p.w, "%s\n", b)
		}
		return
	}
	if !p.header {
		p.header = true
		fmt.Fprintln(p.w, strings.TrimRight(formatRow("TIME", "SESSION", "CALL", "TOOL", "TOOK", "OUTCOME", "DETAILS"), " "))
	}
	if p.totals == nil {
		p.totals = map[string]*wire.Cost{}
	}
	for _, r := range recs {
		line := formatRecord(r)
		switch {
		case r.Kind == audit.KindCall && r.Cost != nil:
			t := p.totals[r.Session]
			if t == nil {
				t = &wire.Cost{}
				p.totals[r.Session] = t
			}
			t.Add(r.Cost)
		case r.Kind == audit.KindSession && r.Decision == "close":
			if t := p.totals[r.Session]; t != nil {
				line = strings.TrimRight(line, " ") + "  total: " + printable.Line(costString(t, true))
				delete(p.totals, r.Session)
			}
		}
		fmt.Fprintln(p.w, line)
	}
}

// costString says what a call (or, with wall, a session) spent, the parts
// that apply: "1 search, 12KiB fetched, cpu 0.02s, peak 3.1MiB".
func costString(c *wire.Cost, wall bool) string {
	var parts []string
	switch c.Searches {
	case 0:
	case 1:
		parts = append(parts, "1 search")
	default:
		parts = append(parts, strconv.Itoa(c.Searches)+" searches")
	}
	if c.BytesFetched > 0 {
		parts = append(parts, grant.FormatSize(c.BytesFetched)+" fetched")
	}
	if c.CPUSeconds > 0 {
		parts = append(parts, fmt.Sprintf("cpu %.2fs", c.CPUSeconds))
	}
	if c.PeakMemory > 0 {
		parts = append(parts, "peak "+grant.FormatSize(c.PeakMemory))
	}
	if wall && c.WallSeconds > 0 {
		parts = append(parts, fmt.Sprintf("sandbox time %.2fs", c.WallSeconds))
	}
	return strings.Join(parts, ", ")
}

func sortRecords(recs []audit.Record) {
	slices.SortStableFunc(recs, func(a, b audit.Record) int { return a.Time.Compare(b.Time) })
}

// formatRecord renders one record as one row. Every field is made
// printable on one line: a record holds text the model or a sandbox chose
// (paths, commands, host names, refusal reasons), and a person reads this.
func formatRecord(r audit.Record) string {
	ts := r.Time.Local().Format("2006-01-02 15:04:05.000")
	call := r.CallID
	if call == "" {
		call = "-"
	}
	switch r.Kind {
	case audit.KindSession:
		outcome := "session " + r.Decision
		if r.Decision == "open" {
			outcome = "session opened"
			if r.Backend != "" {
				outcome += ": " + r.Backend
			}
			if r.Rule != "" {
				outcome += ", grant " + r.Rule
			}
		} else if r.Decision == "close" {
			outcome = "session closed"
		}
		return formatRow(ts, r.Session, "-", "-", "-", outcome, "")
	case audit.KindEgress:
		outcome := "egress allowed"
		if r.Decision == "refused" {
			outcome = "egress REFUSED"
		}
		if r.Count > 1 {
			outcome = fmt.Sprintf("%d× %s (until %s)", r.Count, outcome, r.Until.Local().Format("15:04:05.000"))
		}
		if r.Decision == "refused" && r.Reason != "" {
			outcome += ": " + r.Reason
		}
		where := net.JoinHostPort(r.Host, strconv.Itoa(r.Port))
		if r.Host == "" && r.Port == 0 {
			where = "-"
		}
		if r.Addr != "" {
			where += " → " + r.Addr
		}
		if r.Rule != "" {
			where += " (" + r.Rule + ")"
		}
		return formatRow(ts, r.Session, call, orDash(r.Tool), "-", outcome, where)
	case audit.KindBackgroundStart, audit.KindBackgroundEnd:
		outcome := "background started"
		if r.Kind == audit.KindBackgroundEnd {
			outcome = strings.TrimSpace("background ended: " + string(r.Class) + " " + r.Detail)
		}
		took := "-"
		if r.Kind == audit.KindBackgroundEnd && r.Duration > 0 {
			took = humanDuration(r.Duration)
		}
		return formatRow(ts, r.Session, call, "shell", took, outcome, r.WorkID)
	}
	outcome := string(r.Class)
	if r.Decision == "refused" {
		outcome = "REFUSED: " + r.Reason
	} else if r.Class != wire.ClassOK && r.Detail != "" {
		outcome += ": " + shorten(r.Detail, 120) // the why, for a person (redacted, never the model's)
	}
	if r.ExitCode != nil && *r.ExitCode != 0 {
		outcome += fmt.Sprintf(" (exit %d)", *r.ExitCode)
	}
	if len(r.LimitsHit) > 0 {
		outcome += " (hit: " + wire.JoinLimits(r.LimitsHit, ", ") + ")"
	}
	if len(r.Unenforced) > 0 {
		outcome += " (NOT ENFORCED: " + wire.JoinLimits(r.Unenforced, ", ") + ")"
	}
	details := argsSummary(r)
	if r.Cost != nil {
		if c := costString(r.Cost, false); c != "" {
			details += " [" + c + "]"
		}
	}
	return formatRow(ts, r.Session, call, orDash(r.Tool), humanDuration(r.Duration), outcome, details)
}

// argsSummary shows a record's arguments in a row: runs of blanks or of one
// character counted, and, when that is still longer than 80 bytes, its
// start and its end, where padding would push what a command runs. Abridged
// arguments (a long string) carry the length and the start of the SHA-256
// of the whole; --json shows all of both.
func argsSummary(r audit.Record) string {
	s := headTail(string(audit.CountRuns(r.Args)), 80)
	if r.ArgsSHA256 != "" {
		s += fmt.Sprintf(" [abridged: %d bytes, sha256 %.12s…]", r.ArgsBytes, r.ArgsSHA256)
	}
	return s
}

// headTail cuts s to about n bytes, on characters: its first 5/8 and its
// last 3/8 around a "…".
func headTail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	head, tail := n*5/8, len(s)-n*3/8
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	for tail < len(s) && !utf8.RuneStart(s[tail]) {
		tail++
	}
	return s[:head] + "…" + s[tail:]
}

// shorten cuts s to at most n bytes, on a character, marking the cut.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - 3
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// logColumns are the widths of the columns of airlock log's table but the
// last (time, session, call, tool, took, outcome), so rows printed apart
// (--follow) line up under one header; a longer cell pushes the rest of its
// row along.
var logColumns = []int{23, 20, 21, 18, 7, 20}

// formatRow lays out one row: the fixed columns padded, then the outcome
// and the details, each cell made printable on one line.
func formatRow(cells ...string) string {
	var b strings.Builder
	for i, c := range cells {
		c = printable.Line(c)
		if i > 0 {
			b.WriteString("  ")
		}
		switch {
		case i == 4: // took: right-aligned
			fmt.Fprintf(&b, "%*s", logColumns[i], c)
		case i < len(logColumns):
			fmt.Fprintf(&b, "%-*s", logColumns[i], c)
		default:
			b.WriteString(c)
		}
	}
	return strings.TrimRight(b.String(), " ")
}

// humanDuration renders milliseconds for a person: 0.4ms, 41ms, 1.2s, 2m3s.
func humanDuration(ms float64) string {
	d := time.Duration(ms * float64(time.Millisecond))
	switch {
	case ms <= 0:
		return "-"
	case ms < 1:
		return fmt.Sprintf("%.1fms", ms)
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return d.Round(time.Second).String()
}

// parseSince reads --since: a duration back from now, or a time.
func parseSince(v string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(v); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("a duration back from now must be positive")
		}
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, v, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("want a duration (10m, 2h) or a time (2026-01-02 15:04[:05], or RFC 3339)")
}
